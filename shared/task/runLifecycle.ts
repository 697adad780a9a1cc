import { conflict } from '../errors.ts';
import type { TaskEventType } from './taskEvents.ts';
import type { TaskRecord } from './taskFields.ts';
import {
  allowedTransition,
  failureChanges,
  fromStatesOf,
  IN_FLIGHT_STATES,
  refusedTransitionDetail,
  TRANSITIONS,
  runChanges,
  type RunTrigger,
  type TaskTrigger,
} from './transitions.ts';

/**
 * The run lifecycle as one decider (issue 34): a trigger (what happened to a run) and the task as
 * its stream holds it give the events to record and the effects to perform once they are committed.
 * The code around it is load -> decide -> commit -> perform; no caller names a target state.
 *
 * `RUN_TABLE` is the table a reader checks: per trigger, the spec 3.1 rows it may take (which give
 * the states it leaves and enters), the event it is recorded as and the effects it asks for. The
 * field changes of each row are `runChanges` (transitions.ts), the same function the item decider's
 * guard (`allowedTransition`) was written against, so the two cannot disagree.
 */

export type RunTriggerName = RunTrigger['trigger'];

/**
 * What the world must do once a decision is committed. Effects are data: the caller performs them
 * (the queue commit, the bus, the worker's process), in order, after the events are in the log.
 */
export type RunEffect =
  /** Join the connection's queue (rule 8) and lease a free slot, in the same commit where the store allows. */
  | { type: 'EnqueueRun' }
  /** Send `execute_task` for this dispatch, after its TaskDispatched is committed. */
  | { type: 'PublishExecuteTask'; sessionId: string; dispatchId: string }
  /** The worker starts beating for the run (the lease reaper judges a run by its beats). */
  | { type: 'StartHeartbeat' }
  /** Free the run's connection slot (and lease it to the next waiting run): `finished` by its end, `stale` by the reaper. */
  | { type: 'ReleaseSlot'; reason: 'finished' | 'stale' }
  /** The operator's post actions (rule 7), fire and forget: they never change the run's state. */
  | { type: 'RunPostActions' }
  /** A scheduled task's next run is already due (spec 3.1): the scheduler dispatches it at once. */
  | { type: 'DispatchNextRun' }
  /** The retry rule applies: the scheduler's retry path picks the task again after retry_interval minutes. */
  | { type: 'ScheduleRetry'; afterMinutes: number }
  /** A reset task leaves its connection's queue (spec 4.2 dangerously_reset). */
  | { type: 'LeaveQueue' };

export type RunEffectType = RunEffect['type'];

export interface RunRow {
  trigger: RunTriggerName;
  /** The spec 3.1 rows (transitions.ts) this trigger goes through; their from/to are the states. */
  rows: readonly TaskTrigger[];
  /** The event it is recorded as (the item decider names the same: command-side/catalog/taskLifecycle.ts). */
  event: TaskEventType;
  /** The effects it always asks for; DispatchNextRun and ScheduleRetry are added when the outcome calls for them. */
  effects: readonly RunEffectType[];
}

export const RUN_TABLE: readonly RunRow[] = [
  { trigger: 'RunRequested', rows: ['manual_run', 'cron_dispatch', 'retry_dispatch'], event: 'TaskQueued', effects: ['EnqueueRun'] },
  { trigger: 'Claimed', rows: ['cron_dispatch', 'retry_dispatch'], event: 'TaskQueued', effects: ['EnqueueRun'] },
  { trigger: 'SlotLeased', rows: ['parallelism_available'], event: 'TaskDispatched', effects: ['PublishExecuteTask'] },
  { trigger: 'PickedUp', rows: ['worker_pickup'], event: 'TaskStarted', effects: ['StartHeartbeat'] },
  { trigger: 'Succeeded', rows: ['operator_success'], event: 'TaskSucceeded', effects: ['ReleaseSlot', 'RunPostActions'] },
  { trigger: 'Errored', rows: ['operator_error'], event: 'TaskErrored', effects: ['ReleaseSlot', 'RunPostActions'] },
  { trigger: 'TimedOut', rows: ['completion_timeout'], event: 'TaskTimedOut', effects: ['ReleaseSlot', 'RunPostActions'] },
  { trigger: 'Cancelled', rows: ['cancel_observed'], event: 'TaskCancelled', effects: ['ReleaseSlot', 'RunPostActions'] },
  { trigger: 'Failed', rows: ['invalid_operator'], event: 'TaskFailed', effects: ['ReleaseSlot', 'RunPostActions'] },
  { trigger: 'Reaped', rows: ['lease_reaped'], event: 'TaskErrored', effects: ['ReleaseSlot'] },
  { trigger: 'Reset', rows: ['dangerously_reset'], event: 'TaskReset', effects: ['LeaveQueue'] },
  { trigger: 'ClaimReleased', rows: ['claim_released'], event: 'TaskClaimReleased', effects: [] },
];

const ROW_OF = new Map(RUN_TABLE.map((row) => [row.trigger, row]));

/** The row of a trigger (every trigger has one: RUN_TABLE is checked against RunTrigger by its spec). */
export const runRowOf = (trigger: RunTriggerName): RunRow => ROW_OF.get(trigger) as RunRow;

/** A decided transition, before the item decider stamps it with the item's version (changeTask). */
export interface RunEvent {
  type: TaskEventType;
  data: { from: string; to: string; trigger: RunTriggerName; changes: Record<string, unknown> };
}

export interface RunDecision {
  events: RunEvent[];
  effects: RunEffect[];
}

const inFlight = (state: string): boolean => (IN_FLIGHT_STATES as readonly string[]).includes(state);

/**
 * Decides a trigger on the task as its stream holds it. A trigger whose rows do not leave the
 * task's state is refused (409, the state table's detail), except two idempotent cases that
 * record nothing and ask for nothing: a run requested for a task already in flight (rule 8: it is
 * in its queue already) and a scheduler's request for the run it has just claimed, which records the
 * run's settings on the queued step.
 */
export function decideRun(task: TaskRecord, command: RunTrigger): RunDecision {
  const from = String(task.state ?? 'none');
  const row = runRowOf(command.trigger);
  const { changes, dispatchNow } = runChanges(command, task);
  const to = typeof changes.state === 'string' ? changes.state : from;
  const allowed = row.rows.some((spec) => allowedTransition(from, to, spec));
  if (!allowed) {
    if (command.trigger === 'RunRequested' && inFlight(from)) {
      // A claimed scheduler run (queued_for_connection) records its settings on the queued step.
      if (command.origin === 'scheduler' && from === to) return { events: [{ type: row.event, data: { from, to, trigger: command.trigger, changes } }], effects: [] };
      return { events: [], effects: [] };
    }
    throw conflict(refusedTransitionDetail(from, to));
  }
  const event: RunEvent = { type: row.event, data: { from, to, trigger: command.trigger, changes } };
  const effects: RunEffect[] = row.effects.map((type): RunEffect => {
    switch (type) {
      case 'PublishExecuteTask':
        return command.trigger === 'SlotLeased' ? { type, sessionId: command.sessionId, dispatchId: command.dispatchId } : { type, sessionId: '', dispatchId: '' };
      case 'ReleaseSlot':
        return { type, reason: command.trigger === 'Reaped' ? 'stale' : 'finished' };
      default:
        return { type } as RunEffect;
    }
  });
  if (dispatchNow) effects.push({ type: 'DispatchNextRun' });
  if (to === 'error' || to === 'timeout') {
    const { retryEligible } = failureChanges(task, to);
    if (retryEligible) effects.push({ type: 'ScheduleRetry', afterMinutes: typeof task.retry_interval === 'number' ? task.retry_interval : 1 });
  }
  return { events: [event], effects };
}

/** The field changes of a decision (its one event's), or none: what changeTask commits. */
export const changesOf = (decision: RunDecision): Record<string, unknown>[] => decision.events.map((event) => event.data.changes);

/** The changes of a decision of one event (the rows that always record one: Claimed, ClaimReleased, PickedUp, ends). */
export const onlyChangesOf = (decision: RunDecision): Record<string, unknown> => decision.events[0]?.data.changes ?? {};

/** Whether a decision asks for an effect. */
export const asks = (decision: RunDecision, type: RunEffectType): boolean => decision.effects.some((effect) => effect.type === type);

type OutcomeTrigger = Extract<RunTrigger, { trigger: 'Succeeded' }>['trigger'];

/** A trigger that ends a run as its operator's outcome (the rows that ask for RunPostActions). */
export interface RunEnding {
  trigger: OutcomeTrigger;
  /** The states it ends a run from (running). */
  from: readonly string[];
}

const ENDING_BY_STATE = new Map<string, RunEnding>(
  RUN_TABLE.filter((row) => row.effects.includes('RunPostActions')).map((row) => {
    const spec = row.rows[0] as TaskTrigger;
    return [TRANSITIONS.find((rule) => rule.trigger === spec)?.to as string, { trigger: row.trigger as OutcomeTrigger, from: fromStatesOf(spec) }];
  }),
);

/**
 * The outcome trigger a client's state names (POST /task/update with `state: success` is the run's
 * Succeeded, as at its worker), or null for a state no run ends in.
 */
export const runEndingOf = (state: unknown): RunEnding | null => (typeof state === 'string' ? (ENDING_BY_STATE.get(state) ?? null) : null);
