import { conflict } from '../../shared/errors.ts';
import type { Laui } from '../../shared/ids.ts';
import { EVENT_OF_TARGET_STATE, taskEventOf, type TaskEvent, type TaskEventType } from '../../shared/task/taskEvents.ts';
import { allowedTransition, INITIAL_STATE, refusedTransitionDetail, type TaskTrigger } from '../../shared/task/transitions.ts';
import { backfillMarkAfter, backfillOfChange, NO_BACKFILL, type BackfillMark } from '../../shared/task/backfill/backfillRun.ts';
import type { Decider } from '../kernel/Decider.ts';
import type { ItemEvent } from '../../shared/domain-events/itemEvents.ts';

/**
 * The task aggregate's lifecycle: what the state table (spec 3.1) decides on. A task is a catalog
 * item (its stream is `item-<laui>`, its definition edits are the catalog's); this decider owns
 * what its state changes mean: which transitions are allowed, and the named event each one is.
 */
export interface TaskLifecycle {
  /** 'none' before the task exists. */
  state: string;
  userSetState: string | null;
  /** The task's backfill and whether its run is in flight (issue 36): the run's events name it. */
  backfill?: BackfillMark;
}

/** Why a change is made, when the state alone does not say it: a state table row, or a pre-action that skipped the run. */
export type TaskChangeReason = TaskTrigger | 'pre_actions_skipped';

export interface TaskChange {
  /** The fields that change, each already compared with the task's (unchanged ones left out by the caller). */
  changes: Record<string, unknown>;
  /** The item version after the change and its revision (a definition field changed with it). */
  version: number;
  revisionLaui: Laui | null;
  reason?: TaskChangeReason;
}

export const initialTaskLifecycle = (): TaskLifecycle => ({ state: 'none', userSetState: null });

const userSetStateOf = (value: unknown): string | null => (typeof value === 'string' ? value : null);

export const evolveTaskLifecycle = (state: TaskLifecycle, event: ItemEvent): TaskLifecycle => {
  if (event.type === 'ItemCreated') return { state: String(event.data.fields.state ?? INITIAL_STATE), userSetState: userSetStateOf(event.data.fields.user_set_state) };
  if (!('changes' in event.data)) return state;
  const { changes } = event.data;
  return {
    ...state,
    state: typeof changes.state === 'string' ? changes.state : state.state,
    userSetState: 'user_set_state' in changes ? userSetStateOf(changes.user_set_state) : state.userSetState,
    ...('backfill_id' in changes || 'backfill_resume' in changes ? { backfill: backfillMarkAfter(changes, state.backfill ?? NO_BACKFILL) } : {}),
  };
};

/**
 * The event a state change is: named after the state entered, except the two rows into states
 * that have another event (a reset to scheduled, a released scheduler claim back to where it was).
 */
const transitionEvent = (to: string, reason: TaskChangeReason | undefined): TaskEventType | null => {
  if (reason === 'dangerously_reset') return 'TaskReset';
  if (reason === 'claim_released') return 'TaskClaimReleased';
  return EVENT_OF_TARGET_STATE[to] ?? null;
};

/**
 * The named event of a task change, or none when the change is a field edit (`ItemUpdated`,
 * decided by the catalog). A state change the table refuses is 409 with the from and to states,
 * decided on the state the change is decided on, so no route, worker or scheduler can make it
 * however requests interleave.
 */
export const decideTaskChange = (command: TaskChange, task: TaskLifecycle): TaskEvent[] => {
  const from = task.state;
  const to = typeof command.changes.state === 'string' ? command.changes.state : null;
  const trigger = command.reason === 'pre_actions_skipped' ? undefined : command.reason;
  if (to !== null && to !== from && !allowedTransition(from, to, trigger)) throw conflict(refusedTransitionDetail(from, to));
  if (Object.keys(command.changes).length === 0) return [];
  const record = { changes: command.changes, version: command.version, revision_laui: command.revisionLaui };
  const transition = to !== null || command.reason === 'dangerously_reset' ? transitionEvent(to ?? from, command.reason) : null;
  // A backfill's run: every transition of it names the backfill (its end too, which closes the run).
  const backfill = backfillOfChange(task.backfill ?? NO_BACKFILL, command.changes);
  const named = backfill === null ? {} : { backfill_id: backfill };
  if (transition !== null) return [taskEventOf(transition, { from, to: to ?? from, ...(trigger ? { trigger } : {}), ...record, ...named })];
  if (command.reason === 'pre_actions_skipped') return [taskEventOf('TaskSkipped', { from, to: from, ...record })];
  if (command.changes.user_set_state === 'cancel') return [taskEventOf('TaskCancellationRequested', { from, to: from, ...record })];
  return [];
};

/** The task lifecycle as a decider: its state machine is the 3.1 table (taskLifecycle.unit.spec.ts covers every row and refusal). */
export const taskDecider: Decider<TaskLifecycle, TaskChange, ItemEvent> = {
  initialState: initialTaskLifecycle,
  evolve: evolveTaskLifecycle,
  decide: decideTaskChange,
};
