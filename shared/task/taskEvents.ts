import type { DomainEvent } from '../events.ts';
import type { Laui } from '../ids.ts';
import type { TaskTrigger } from './transitions.ts';

/**
 * The named events of a task's lifecycle, in the task's own `item-<laui>` stream (a task is a
 * catalog item: its definition edits stay `ItemUpdated`). One past-tense event per transition of
 * the state table (spec 3.1), so an auditor reads "queued, dispatched, started, succeeded" where
 * the log once held field diffs. Clients rely on these names: never rename one, add a version.
 *
 * Every lifecycle event carries the same change record as `ItemUpdated` (`changes`, `version`,
 * `revision_laui`), so every fold of an item (its aggregate, the read model, revisions) applies
 * them alike; `from`/`to` say which transition it was (`from` is null on events upcast from the
 * log written before these names existed, where the state left is not in the event).
 */
export const TASK_EVENT_TYPES = [
  'TaskQueued',
  'TaskDispatched',
  'TaskStarted',
  'TaskSucceeded',
  'TaskErrored',
  'TaskTimedOut',
  'TaskCancelled',
  'TaskFailed',
  'TaskReset',
  'TaskClaimReleased',
  'TaskCancellationRequested',
  'TaskSkipped',
] as const;

export type TaskEventType = (typeof TASK_EVENT_TYPES)[number];

/** What every change event of an item records: the fields set, the item version after it, its revision (versioned changes only). */
export type ItemChangeData = {
  changes: Record<string, unknown>;
  version: number;
  revision_laui: Laui | null;
};

export type TaskTransitionData = ItemChangeData & {
  /** The task state left (null when unknown: an event upcast from the release before named events). */
  from: string | null;
  /** The task state entered (the state kept for the requests and skips that change none). */
  to: string | null;
  /** The state table's row, when the change named one (dangerously_reset, claim_released). */
  trigger?: TaskTrigger;
  /** The backfill whose run this is (issue 36); absent for every other run. */
  backfill_id?: Laui;
};

/** TaskDispatched also says which dispatch and session the run is: what the worker records as task_instance and session_id. */
export type TaskDispatchedData = TaskTransitionData & {
  execution_id: string | null;
  session_id: string | null;
};

export type TaskEvent =
  | DomainEvent<'TaskDispatched', TaskDispatchedData>
  | DomainEvent<Exclude<TaskEventType, 'TaskDispatched'>, TaskTransitionData>;

/** The event of a transition into `to`, for the states with one event (scheduled has two: reset or released claim). */
export const EVENT_OF_TARGET_STATE: Readonly<Record<string, TaskEventType>> = {
  queued_for_connection: 'TaskQueued',
  queued_in_redis: 'TaskDispatched',
  running: 'TaskStarted',
  success: 'TaskSucceeded',
  error: 'TaskErrored',
  timeout: 'TaskTimedOut',
  cancelled: 'TaskCancelled',
  fail: 'TaskFailed',
};

const TASK_EVENT_SET: ReadonlySet<string> = new Set(TASK_EVENT_TYPES);
export const isTaskEventType = (type: string): type is TaskEventType => TASK_EVENT_SET.has(type);

/** A task event's data; TaskDispatched adds the dispatch's ids, read from its queued_in_redis change. */
export const taskEventOf = (type: TaskEventType, data: TaskTransitionData): TaskEvent =>
  type === 'TaskDispatched'
    ? {
        type,
        data: {
          ...data,
          execution_id: typeof data.changes.task_instance === 'string' ? data.changes.task_instance : null,
          session_id: typeof data.changes.session_id === 'string' ? data.changes.session_id : null,
        },
      }
    : { type, data };
