import { ADHOC, advanceLogicalDate, nextCronDate } from './cron.ts';
import { iso, toInstant } from './dates.ts';
import { retryFields, type TaskRecord, type TaskState } from './taskFields.ts';
import { TASK_STATES } from '../item-types/schemas/task.ts';
import { withBackfillRun } from './backfill/backfillRun.ts';

const TASK_STATE_LIST: readonly string[] = TASK_STATES;

/**
 * The task state machine of spec 3.1 and the field changes each transition implies. Pure: every
 * function returns changes (ISO strings for timestamps) for the caller to record; `now` is an argument.
 *
 * Decisions beyond the spec table:
 * - Transitions out of `created` (not shown in the spec): only a manual run (POST /task/run,
 *   /task/multiple_tasks) and dangerously_reset leave it.
 * - A manual run is allowed from every state that is not in flight (queued_for_connection,
 *   queued_in_redis, running) except `cancelled`, whose user_set_state `cancel` would cancel the new run
 *   at once: dangerously_reset first. The cron takes scheduled/success (normal) and error/timeout (retry).
 * - Worker pick-up (queued_in_redis -> running) increments `iteration` (lifetime execution count) and sets
 *   task_instance_start_date, latest_heartbeat and the data interval:
 *   data_interval_start = logical_date, data_interval_end = the next logical date (one cron step,
 *   `advanceLogicalDate`); an ADHOC task's interval is empty (end = start = logical_date).
 * - Success: retry_number 0; prev_interval_start/end = the run's data interval (recomputed from
 *   logical_date when absent); scheduled tasks advance logical_date one cron step and next_run_date one
 *   cron interval from the previous next_run_date (from now when there was none), and `dispatchNow`
 *   says the new next_run_date is not later than now (and not after end_date). ADHOC tasks keep both.
 * - Error and timeout increment retry_number; `retryEligible` is the spec's
 *   `total_retries > 0 and retry_number < total_retries` on the incremented value (so total_retries
 *   counts attempts including the first run: 3 means at most 2 automatic retries).
 * - Cancelled and fail change only the state; user_set_state stays `cancel` after a cancellation.
 * - The worker's own report (duration, last_run_output, last_run_date, task_instance_end_date) is not
 *   computed here.
 * - Rows beyond the spec table, for what the service itself does: `lease_reaped` (a dispatch whose
 *   worker stopped beating, queued_in_redis or running, ends in error, so the retry rule applies) and
 *   `claim_released` (a scheduler claim whose dispatch failed goes back to the state it was claimed
 *   from).
 * - The API obeys this table (issue 19): every change of a task's `state`, whatever route or process
 *   makes it, is checked by the item decider (`allowedTransition`) against the state it is decided
 *   on, and a refused one is a 409 (`refusedTransitionDetail`). A change that names no trigger
 *   (POST /task/update, /catalog/update, runs, the worker, the scheduler's claim) may take any row
 *   but the restricted ones: `dangerously_reset` (any -> scheduled) only through
 *   POST /task/dangerously_reset, and `claim_released` only by the scheduler, so a cancelled task
 *   runs again only after dangerously_reset.
 */

export type TaskTrigger =
  | 'manual_run'
  | 'cron_dispatch'
  | 'retry_dispatch'
  | 'parallelism_available'
  | 'worker_pickup'
  | 'operator_success'
  | 'operator_error'
  | 'completion_timeout'
  | 'cancel_observed'
  | 'invalid_operator'
  | 'dangerously_reset'
  | 'lease_reaped'
  | 'claim_released';

export interface TransitionRule {
  trigger: TaskTrigger;
  from: readonly TaskState[] | 'any';
  to: TaskState;
}

export const TRANSITIONS: readonly TransitionRule[] = [
  { trigger: 'manual_run', from: ['created', 'scheduled', 'success', 'error', 'timeout', 'fail'], to: 'queued_for_connection' },
  { trigger: 'cron_dispatch', from: ['scheduled', 'success'], to: 'queued_for_connection' },
  { trigger: 'retry_dispatch', from: ['error', 'timeout'], to: 'queued_for_connection' },
  { trigger: 'parallelism_available', from: ['queued_for_connection'], to: 'queued_in_redis' },
  { trigger: 'worker_pickup', from: ['queued_in_redis'], to: 'running' },
  { trigger: 'operator_success', from: ['running'], to: 'success' },
  { trigger: 'operator_error', from: ['running'], to: 'error' },
  { trigger: 'completion_timeout', from: ['running'], to: 'timeout' },
  { trigger: 'cancel_observed', from: ['running'], to: 'cancelled' },
  { trigger: 'invalid_operator', from: ['running'], to: 'fail' },
  { trigger: 'dangerously_reset', from: 'any', to: 'scheduled' },
  { trigger: 'lease_reaped', from: ['queued_in_redis', 'running'], to: 'error' },
  { trigger: 'claim_released', from: ['queued_for_connection'], to: 'scheduled' },
  { trigger: 'claim_released', from: ['queued_for_connection'], to: 'success' },
  { trigger: 'claim_released', from: ['queued_for_connection'], to: 'error' },
  { trigger: 'claim_released', from: ['queued_for_connection'], to: 'timeout' },
];

/** Rows a state change takes only when its caller names their trigger. */
const RESTRICTED_TRIGGERS: ReadonlySet<TaskTrigger> = new Set(['dangerously_reset', 'claim_released']);

export const IN_FLIGHT_STATES: readonly TaskState[] = ['queued_for_connection', 'queued_in_redis', 'running'];

const applies = (rule: TransitionRule, from: string): boolean =>
  rule.from === 'any' || (rule.from as readonly string[]).includes(from);

/** The target state of `trigger` from `from`, or null when the trigger does not apply there. */
export function transitionTarget(from: string, trigger: TaskTrigger): TaskState | null {
  const rule = TRANSITIONS.find((candidate) => candidate.trigger === trigger && applies(candidate, from));
  return rule === undefined ? null : rule.to;
}

export function canTransition(from: string, to: string): boolean {
  return TRANSITIONS.some((rule) => rule.to === to && applies(rule, from));
}

/**
 * Whether a task's state may change from `from` to `to` (the states differ): through `trigger`'s
 * row when the change names it, else through any row but the restricted ones.
 */
export function allowedTransition(from: string, to: string, trigger?: TaskTrigger): boolean {
  if (trigger !== undefined) return TRANSITIONS.some((rule) => rule.trigger === trigger && rule.to === to && applies(rule, from));
  return TRANSITIONS.some((rule) => !RESTRICTED_TRIGGERS.has(rule.trigger) && rule.to === to && applies(rule, from));
}

/** The states a trigger leaves from ('any' reads as every state). */
export const fromStatesOf = (trigger: TaskTrigger): readonly string[] => [
  ...new Set(TRANSITIONS.filter((rule) => rule.trigger === trigger).flatMap((rule) => (rule.from === 'any' ? TASK_STATE_LIST : rule.from))),
];

/** The 409 detail of a refused state change. */
export function refusedTransitionDetail(from: string, to: string): string {
  const hint =
    from === 'cancelled'
      ? '; a cancelled task runs again only after POST /task/dangerously_reset'
      : to === 'scheduled'
        ? '; POST /task/dangerously_reset makes any task scheduled'
        : '';
  return `Invalid task state transition: ${from} -> ${to} is not allowed by the task state table (spec 3.1)${hint}`;
}

/**
 * A manual run (POST /task/run, /task/multiple_tasks) of a task in `state`: null when allowed, else
 * the 409 detail. States in flight pass: rule 8 drops a task already in its queue, as before.
 */
export function manualRunRefusal(state: string): string | null {
  if ((IN_FLIGHT_STATES as readonly string[]).includes(state) || transitionTarget(state, 'manual_run') !== null) return null;
  return refusedTransitionDetail(state, 'queued_for_connection');
}

/** Field changes, as stored (timestamps as ISO strings). */
export interface TaskChanges {
  state?: TaskState;
  logical_date?: string;
  next_run_date?: string;
  retry_number?: number;
  iteration?: number;
  latest_heartbeat?: string;
  task_instance_start_date?: string;
  data_interval_start?: string;
  data_interval_end?: string;
  prev_interval_start?: string;
  prev_interval_end?: string;
  user_set_state?: null;
  last_run_output?: Record<string, never>;
  actions_status?: { pre_actions: []; running_actions: []; post_actions: [] };
  last_system_updated_date?: string;
}

const frequencyOf = (task: TaskRecord): string => task.frequency ?? ADHOC;

/** Who starts a run: a user (POST /task/run, /task/multiple_tasks) or the scheduler (a due run or a retry). */
export type RunOrigin = 'user' | 'scheduler';

/**
 * The logical_date a run writes as it is queued, or null to leave the stored one: the request's
 * (`override`, already checked to be a datetime) as given; else, for an ADHOC task started by a user,
 * the current UTC (spec 2.4), so that each re-run computes its own period and {{ds}}/{{ts}} name it;
 * a scheduler retry of an ADHOC run keeps the failed run's date (now when it has none). A scheduled
 * task keeps the date its schedule set: the caller's copy may lag a run that just advanced it.
 */
export function runLogicalDate(task: TaskRecord, override: unknown, now: Date, origin: RunOrigin): string | null {
  if (typeof override === 'string' && toInstant(override) !== null) return override;
  if (frequencyOf(task) !== ADHOC) return null;
  return origin === 'user' || toInstant(task.logical_date) === null ? iso(now) : null;
}

/** The data interval computed by a run with this logical date. */
export function dataInterval(task: TaskRecord, now: Date): { start: Date; end: Date } {
  const frequency = frequencyOf(task);
  const start = toInstant(task.logical_date) ?? now;
  return { start, end: frequency === ADHOC ? start : advanceLogicalDate(start, frequency) };
}

/** scheduled/success/error/timeout/... -> queued_for_connection (the caller enqueues). */
export const enqueueChanges = (): TaskChanges => ({ state: 'queued_for_connection' });

/** queued_for_connection -> queued_in_redis (the caller dispatches to the broker). */
export const brokerDispatchChanges = (): TaskChanges => ({ state: 'queued_in_redis' });

/** queued_in_redis -> running. */
export function workerPickupChanges(task: TaskRecord, now: Date): TaskChanges {
  const interval = dataInterval(task, now);
  return {
    state: 'running',
    iteration: (typeof task.iteration === 'number' ? task.iteration : 0) + 1,
    task_instance_start_date: iso(now),
    latest_heartbeat: iso(now),
    data_interval_start: iso(interval.start),
    data_interval_end: iso(interval.end),
  };
}

export interface SuccessOutcome {
  changes: TaskChanges;
  /** The new next_run_date is already due: dispatch the next run at once (spec 3.1). */
  dispatchNow: boolean;
}

/** running -> success. */
export function successChanges(task: TaskRecord, now: Date): SuccessOutcome {
  const frequency = frequencyOf(task);
  const computed = dataInterval(task, now);
  const changes: TaskChanges = {
    state: 'success',
    retry_number: 0,
    prev_interval_start: iso(toInstant(task.data_interval_start) ?? computed.start),
    prev_interval_end: iso(toInstant(task.data_interval_end) ?? computed.end),
  };
  if (frequency === ADHOC) return { changes, dispatchNow: false };
  const logical = toInstant(task.logical_date);
  if (logical !== null) changes.logical_date = iso(advanceLogicalDate(logical, frequency));
  const next = nextCronDate(frequency, toInstant(task.next_run_date) ?? now);
  changes.next_run_date = iso(next);
  const end = toInstant(task.end_date);
  const dispatchNow = next.getTime() <= now.getTime() && (end === null || next.getTime() <= end.getTime());
  return { changes, dispatchNow };
}

export interface FailureOutcome {
  changes: TaskChanges;
  /** The cron retry path will pick the task again (once retry_interval has elapsed). */
  retryEligible: boolean;
}

/** running -> error (operator exception or status failed) or timeout (completion timeout exceeded). */
export function failureChanges(task: TaskRecord, to: 'error' | 'timeout'): FailureOutcome {
  const { total_retries, retry_number } = retryFields(task);
  const next = retry_number + 1;
  return { changes: { state: to, retry_number: next }, retryEligible: total_retries > 0 && next < total_retries };
}

/** running -> cancelled (user_set_state cancel observed by the worker). */
export const cancelledChanges = (): TaskChanges => ({ state: 'cancelled' });

/** running -> fail (invalid operator or missing codeblock; permanent). */
export const failChanges = (): TaskChanges => ({ state: 'fail' });

/** POST /task/dangerously_reset (spec 4.2): the caller also removes the task from its connection queue. */
export function dangerousResetChanges(now: Date): TaskChanges {
  return {
    state: 'scheduled',
    last_run_output: {},
    user_set_state: null,
    actions_status: { pre_actions: [], running_actions: [], post_actions: [] },
    last_system_updated_date: iso(now),
  };
}

/**
 * What moves a run along (issue 34): callers name what happened, never a state. Each trigger is a row
 * (or rows) of the table above; `runChanges` gives the target state and every field the row implies,
 * so no task state is written anywhere but here.
 */
export type RunTrigger =
  /** A run is asked for (a user: POST /task/run, /task/multiple_tasks; the scheduler: a due run or a retry): queued for its connection. */
  | { trigger: 'RunRequested'; origin: RunOrigin; at: Date; logicalDate?: unknown; totalRetries: number; retryInterval: number; runBy: string | null; backfillId?: string }
  /** The scheduler claimed a due run or a retry: queued for its connection. */
  | { trigger: 'Claimed'; at: Date }
  /** The connection's queue leased the run a slot: sent to the workers under this session. */
  | { trigger: 'SlotLeased'; at: Date; sessionId: string; dispatchId: string }
  /** A worker took the run. */
  | { trigger: 'PickedUp'; at: Date }
  /** The run ended at its worker: the operator's outcome. */
  | { trigger: 'Succeeded' | 'Errored' | 'TimedOut' | 'Cancelled' | 'Failed'; at: Date }
  /** Its worker died or its message could not be sent: the lease reaper ended it. */
  | { trigger: 'Reaped'; at: Date }
  /** POST /task/dangerously_reset. */
  | { trigger: 'Reset'; at: Date }
  /** The scheduler's claim whose dispatch failed goes back to the state it was claimed from. */
  | { trigger: 'ClaimReleased'; to: string };

export interface RunChanges {
  changes: Record<string, unknown>;
  /** Succeeded: the next run of a scheduled task is already due (spec 3.1). */
  dispatchNow: boolean;
}

/** The states a run in the connection queue or at a worker holds: a manual run leaves them alone (rule 8). */
export const NOT_IN_FLIGHT_STATES: readonly string[] = TASK_STATE_LIST.filter((state) => !(IN_FLIGHT_STATES as readonly string[]).includes(state));
/** A run that reached one of these is over; its lease, if still held, is freed by the next run's queue commit. */
export const TERMINAL_STATES: readonly string[] = [...new Set(TRANSITIONS.filter((rule) => rule.from !== 'any' && (rule.from as readonly string[]).includes('running')).map((rule) => rule.to))];
/** States of a run that holds its connection slot (leased, at a worker). */
export const LEASED_STATES: readonly string[] = fromStatesOf('lease_reaped');
/** The state a worker takes a run from; a message finding its task elsewhere is a duplicate. */
export const PICKUP_STATE: string = fromStatesOf('worker_pickup')[0] as string;
/** The state a run waits in for its connection's slot (the scheduler's claim checks it is still there). */
export const QUEUED_STATE: string = transitionTarget('scheduled', 'cron_dispatch') as string;
/** Where a task starts, and where a reset puts it back: a task whose fields hold no state is in it. */
export const INITIAL_STATE: string = transitionTarget('running', 'dangerously_reset') as string;
/** The states the scheduler runs a due task from (its schedule), and those it retries from. */
export const SCHEDULED_FROM: readonly string[] = fromStatesOf('cron_dispatch');
export const RETRY_FROM: readonly string[] = fromStatesOf('retry_dispatch');

const ENDED_BY: Record<'Succeeded' | 'Errored' | 'TimedOut' | 'Cancelled' | 'Failed', TaskState> = {
  Succeeded: 'success',
  Errored: 'error',
  TimedOut: 'timeout',
  Cancelled: 'cancelled',
  Failed: 'fail',
};

/**
 * The changes a trigger makes to a run as its task's stream holds it (`task`): the lifecycle's one
 * writer of states. A backfill's run (issue 36) keeps the schedule's fields: backfill/backfillRun.ts.
 */
export const runChanges = (command: RunTrigger, task: TaskRecord): RunChanges => withBackfillRun(command, task, lifecycleChanges(command, task));

function lifecycleChanges(command: RunTrigger, task: TaskRecord): RunChanges {
  const at = 'at' in command ? iso(command.at) : null;
  const plain = (changes: TaskChanges | Record<string, unknown>): RunChanges => ({ changes: { ...changes }, dispatchNow: false });
  switch (command.trigger) {
    case 'RunRequested':
      return plain({
        ...enqueueChanges(),
        user_set_state: null,
        total_retries: command.totalRetries,
        retry_interval: command.retryInterval,
        last_system_updated_date: at,
        // Whose rights the run acts with at the worker (checkTaskReferences.ts: runPrincipalLaui).
        run_by: command.runBy,
        ...(() => {
          const logicalDate = runLogicalDate(task, command.logicalDate, command.at, command.origin);
          return logicalDate === null ? {} : { logical_date: logicalDate };
        })(),
      });
    case 'Claimed':
      return plain({ ...enqueueChanges(), last_system_updated_date: at });
    case 'SlotLeased':
      // task_instance: the dispatch's id, which the worker records at pick-up; set here already so the
      // TaskDispatched event names the execution it sends.
      return plain({ ...brokerDispatchChanges(), session_id: command.sessionId, task_instance: command.dispatchId, last_system_updated_date: at });
    case 'PickedUp':
      return plain(workerPickupChanges(task, command.at));
    case 'Succeeded':
      return successChanges(task, command.at) as RunChanges;
    case 'Errored':
    case 'TimedOut':
      return plain(failureChanges(task, ENDED_BY[command.trigger] as 'error' | 'timeout').changes);
    case 'Cancelled':
      return plain(cancelledChanges());
    case 'Failed':
      return plain(failChanges());
    case 'Reaped':
      return plain(failureChanges(task, 'error').changes);
    case 'Reset':
      return plain(dangerousResetChanges(command.at));
    case 'ClaimReleased':
      return plain({ state: command.to });
  }
}

/** The trigger of a run's end at its worker, from the operator's outcome. */
export const endTrigger = (status: 'success' | 'error' | 'timeout' | 'cancelled' | 'fail'): 'Succeeded' | 'Errored' | 'TimedOut' | 'Cancelled' | 'Failed' =>
  (Object.entries(ENDED_BY).find(([, state]) => state === status)?.[0] ?? 'Errored') as 'Succeeded' | 'Errored' | 'TimedOut' | 'Cancelled' | 'Failed';

/** A running task whose run started at least `timeoutSeconds` ago has exceeded its completion timeout. */
export function isCompletionTimedOut(task: TaskRecord, now: Date, timeoutSeconds: number): boolean {
  const started = toInstant(task.task_instance_start_date);
  return task.state === 'running' && started !== null && started.getTime() + timeoutSeconds * 1000 <= now.getTime();
}

/** A running task whose latest heartbeat (or, without one, its start) is older than `staleSeconds` is stale. */
export function isHeartbeatStale(task: TaskRecord, now: Date, staleSeconds: number): boolean {
  const beat = toInstant(task.latest_heartbeat) ?? toInstant(task.task_instance_start_date);
  return task.state === 'running' && (beat === null || now.getTime() - beat.getTime() > staleSeconds * 1000);
}
