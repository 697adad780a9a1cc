import type { Laui } from '../../ids.ts';
import type { TaskRecord } from '../taskFields.ts';
import type { RunChanges, RunTrigger } from '../transitions.ts';

/**
 * A backfill's run on the task's own lifecycle (issue 36). A task holds one run at a time, and a run
 * computes the task's `logical_date` (its data interval is taken at pick-up from it); a scheduled
 * run's success moves the schedule (logical_date, next_run_date) one step. A backfill run must do
 * the first and not the second, so `runChanges` passes every decision through here:
 *
 * - RunRequested for a backfill: the run's logical_date is the step's; the schedule's fields are kept
 *   aside in `backfill_resume` and the state the schedule was in in `backfill_schedule_state`;
 *   `backfill_id` names the backfill. While `backfill_resume` is set the run is the backfill's, and
 *   the task aggregate names the backfill on each of its events (taskLifecycle.ts, `backfillRunAfter`).
 * - The run's end (Succeeded, Errored, TimedOut, Cancelled, Failed, Reaped) and a reset during it:
 *   the state is the row's, as for any run, but the schedule's fields come back as they were (no
 *   schedule step, no retry count, no "next run due now"), and `backfill_resume` is cleared.
 * - The next run that is not a backfill's (a user's, the cron's claim) clears the three fields.
 *
 * The scheduler sees a task whose last run was a backfill's in the state its schedule was in
 * (`scheduleStateOf`): a failed backfill step neither stops the schedule nor takes its retry path.
 */
export interface BackfillRunFields {
  backfill_id?: Laui | null;
  backfill_resume?: Record<string, unknown> | null;
  backfill_schedule_state?: string | null;
}

/** The schedule's fields a backfill run writes over and gives back at its end. */
const RESUMED_FIELDS = ['logical_date', 'next_run_date', 'retry_number', 'prev_interval_start', 'prev_interval_end'] as const;

const ENDS: ReadonlySet<RunTrigger['trigger']> = new Set(['Succeeded', 'Errored', 'TimedOut', 'Cancelled', 'Failed', 'Reaped', 'Reset']);

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const CLEARED = { backfill_id: null, backfill_resume: null, backfill_schedule_state: null };

export function withBackfillRun(command: RunTrigger, task: TaskRecord, result: RunChanges): RunChanges {
  const fields = task as TaskRecord & BackfillRunFields & Record<string, unknown>;
  const current = typeof fields.backfill_id === 'string' ? fields.backfill_id : null;
  const resume = isRecord(fields.backfill_resume) ? fields.backfill_resume : null;
  const named = (extra: Record<string, unknown>): RunChanges => ({ changes: { ...result.changes, ...extra }, dispatchNow: result.dispatchNow });
  switch (command.trigger) {
    case 'RunRequested':
      if (command.backfillId !== undefined) {
        // After another backfill step, the schedule's state is the one kept aside, not the step's outcome.
        const scheduleState = current !== null && typeof fields.backfill_schedule_state === 'string' ? fields.backfill_schedule_state : String(fields.state ?? 'scheduled');
        const kept = resume ?? Object.fromEntries(RESUMED_FIELDS.map((field) => [field, fields[field] ?? null]));
        return named({ backfill_id: command.backfillId, backfill_resume: kept, backfill_schedule_state: scheduleState });
      }
      return current === null && resume === null ? result : { changes: { ...(resume ?? {}), ...result.changes, ...CLEARED }, dispatchNow: result.dispatchNow };
    case 'Claimed':
      return current === null && resume === null ? result : { changes: { ...(resume ?? {}), ...result.changes, ...CLEARED }, dispatchNow: result.dispatchNow };
    case 'SlotLeased':
    case 'PickedUp':
    case 'ClaimReleased':
      return result;
    default:
      if (!ENDS.has(command.trigger) || resume === null) return result;
      return {
        changes: { ...withoutScheduleStep(result.changes), ...resume, backfill_resume: null },
        dispatchNow: false,
      };
  }
}

/** A success's schedule step and interval bookkeeping, which a backfill run does not make. */
const withoutScheduleStep = (changes: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(changes).filter(([field]) => !(RESUMED_FIELDS as readonly string[]).includes(field)));

const SCHEDULE_KEEPS: readonly string[] = ['success', 'error', 'timeout'];

/** The state the scheduler reads a task in: after a backfill run that ended, the state its schedule was in. */
export function scheduleStateOf(task: TaskRecord): string {
  const fields = task as TaskRecord & BackfillRunFields;
  const state = task.state ?? 'scheduled';
  if (typeof fields.backfill_id !== 'string' || isRecord(fields.backfill_resume) || !SCHEDULE_KEEPS.includes(state)) return state;
  return typeof fields.backfill_schedule_state === 'string' ? fields.backfill_schedule_state : state;
}

/** What the task aggregate knows of a task's backfill: its `backfill_id` field and whether its run is in flight. */
export interface BackfillMark {
  id: Laui | null;
  running: boolean;
}

export const NO_BACKFILL: BackfillMark = Object.freeze({ id: null, running: false });

/** The mark after `changes` (a task's fields fold the same way: `backfillMarkAfter(fields, NO_BACKFILL)`). */
export function backfillMarkAfter(changes: Record<string, unknown>, before: BackfillMark): BackfillMark {
  const id = 'backfill_id' in changes ? (typeof changes.backfill_id === 'string' ? changes.backfill_id : null) : before.id;
  const running = 'backfill_resume' in changes ? isRecord(changes.backfill_resume) : before.running;
  return id === before.id && running === before.running ? before : { id, running };
}

/**
 * The backfill a change of the task belongs to, or null: a run is a backfill's from the request that
 * keeps the schedule aside to the end that gives it back (both included).
 */
export function backfillOfChange(before: BackfillMark, changes: Record<string, unknown>): Laui | null {
  const after = backfillMarkAfter(changes, before);
  return before.running || after.running ? after.id : null;
}
