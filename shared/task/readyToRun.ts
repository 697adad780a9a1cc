import { ADHOC } from './cron.ts';
import { MINUTE_MS, toInstant } from './dates.ts';
import { retryFields, type TaskRecord } from './taskFields.ts';
import { scheduleStateOf } from './backfill/backfillRun.ts';
import { RETRY_FROM, SCHEDULED_FROM } from './transitions.ts';

/**
 * Which tasks run (pure; `now` and the parent workflow state are arguments).
 *
 * `readyToRunDecision` is GET /catalog/get/tasks_ready_to_run (spec 4.3) exactly. A task is ready when
 * all hold: item_type task; project_laui matches; deleted_at null; start_date before now; user_set_state
 * is not cancel; end_date null or logical_date <= end_date; parent workflow not PAUSE; and one of
 *   normal: state scheduled or success, and logical_date <= now;
 *   retry:  state error or timeout, total_retries > 0, retry_number < total_retries and
 *           last_run_date + retry_interval * 60000 ms <= now.
 * Absent or unparsable timestamps compare as false, like a database range query on a null field:
 * a task without start_date (ADHOC) is never ready here; a null logical_date fails both the end_date
 * bound (when end_date is set) and the normal path; a null last_run_date fails the retry path.
 * Only workflow state `PAUSE` excludes; an unknown state (or no workflow) does not.
 *
 * `schedulerDue` is the scheduler cycle selection (spec 4.5): (1) scheduled tasks — non-ADHOC tasks in
 * state scheduled or success (the schedulable states of diagnose check 7) — with next_run_date <= now
 * and (end_date null or next_run_date <= end_date); (2) retry-eligible tasks (the retry path above,
 * retry_interval in minutes as in 4.3, ADHOC tasks included); (3) tasks in a paused workflow dropped.
 * Deleted tasks, non-tasks and tasks with user_set_state cancel are never due.
 */

export type ReadyPath = 'normal' | 'retry';

export type Exclusion =
  | 'not_a_task'
  | 'other_project'
  | 'deleted'
  | 'not_started'
  | 'cancel_requested'
  | 'past_end_date'
  | 'workflow_paused'
  | 'logical_date_in_future'
  | 'adhoc'
  | 'next_run_date_in_future'
  | 'next_run_date_after_end_date'
  | 'retries_exhausted'
  | 'retry_interval_not_elapsed'
  | 'state_not_runnable';

export type Decision<P extends string> = { ready: true; path: P } | { ready: false; reason: Exclusion };

export interface ReadyContext {
  projectLaui: string;
  workflowState: string | null | undefined;
  now: Date;
}

// The table's rows (transitions.ts), not a copy of them.
const NORMAL_STATES = SCHEDULED_FROM;
const RETRY_STATES = RETRY_FROM;

const no = (reason: Exclusion): { ready: false; reason: Exclusion } => ({ ready: false, reason });

/** The retry path (spec 4.3), shared by both selections; null when eligible. */
function retryExclusion(task: TaskRecord, now: Date): Exclusion | null {
  const { total_retries, retry_number, retry_interval } = retryFields(task);
  if (!(total_retries > 0 && retry_number < total_retries)) return 'retries_exhausted';
  const lastRun = toInstant(task.last_run_date);
  if (lastRun === null || lastRun.getTime() + retry_interval * MINUTE_MS > now.getTime()) return 'retry_interval_not_elapsed';
  return null;
}

/** Exclusions common to both selections. */
function commonExclusion(task: TaskRecord, workflowState: string | null | undefined): Exclusion | null {
  if (task.item_type !== undefined && task.item_type !== 'task') return 'not_a_task';
  if (task.deleted_at !== undefined && task.deleted_at !== null) return 'deleted';
  if (task.user_set_state === 'cancel') return 'cancel_requested';
  if (workflowState === 'PAUSE') return 'workflow_paused';
  return null;
}

export function readyToRunDecision(task: TaskRecord, context: ReadyContext): Decision<ReadyPath> {
  const { now } = context;
  if (task.item_type !== 'task') return no('not_a_task');
  if (task.project_laui !== context.projectLaui) return no('other_project');
  const common = commonExclusion(task, context.workflowState);
  if (common !== null) return no(common);
  const start = toInstant(task.start_date);
  if (start === null || start.getTime() >= now.getTime()) return no('not_started');
  const logical = toInstant(task.logical_date);
  const end = toInstant(task.end_date);
  if (end !== null && (logical === null || logical.getTime() > end.getTime())) return no('past_end_date');
  // A backfill's finished run leaves the schedule in the state it had (issue 36).
  const state = scheduleStateOf(task);
  if (NORMAL_STATES.includes(state)) {
    return logical !== null && logical.getTime() <= now.getTime() ? { ready: true, path: 'normal' } : no('logical_date_in_future');
  }
  if (RETRY_STATES.includes(state)) {
    const retry = retryExclusion(task, now);
    return retry === null ? { ready: true, path: 'retry' } : no(retry);
  }
  return no('state_not_runnable');
}

export const isReadyToRun = (task: TaskRecord, context: ReadyContext): boolean => readyToRunDecision(task, context).ready;

export type SchedulerPath = 'scheduled' | 'retry';

export function schedulerDue(task: TaskRecord, now: Date, workflowState?: string | null): Decision<SchedulerPath> {
  const common = commonExclusion(task, workflowState);
  if (common !== null) return no(common);
  // A backfill's finished run leaves the schedule in the state it had (issue 36).
  const state = scheduleStateOf(task);
  if (NORMAL_STATES.includes(state)) {
    if ((task.frequency ?? ADHOC) === ADHOC) return no('adhoc');
    const next = toInstant(task.next_run_date);
    if (next === null || next.getTime() > now.getTime()) return no('next_run_date_in_future');
    const end = toInstant(task.end_date);
    if (end !== null && next.getTime() > end.getTime()) return no('next_run_date_after_end_date');
    return { ready: true, path: 'scheduled' };
  }
  if (RETRY_STATES.includes(state)) {
    const retry = retryExclusion(task, now);
    return retry === null ? { ready: true, path: 'retry' } : no(retry);
  }
  return no('state_not_runnable');
}
