import { ADHOC, advanceLogicalDate, cronGranularity, floorToGranularity, initialLogicalDate, initialNextRunDate, nextCronDate, previousCronDate, previousOrSameCronDate } from './cron.ts';
import { iso, MINUTE_MS, toInstant } from './dates.ts';
import type { TaskRecord } from './taskFields.ts';

/**
 * Field changes the scheduler makes to a task's schedule before it claims the task. Pure.
 *
 * Initialisation: next_run_date = the first cron fire at or after start_date and, when absent,
 * logical_date = the first logical date (both from shared/task/cron). Applied when a scheduled
 * (non-ADHOC) task is created (command-side/catalog/createItem.ts: every way a task is created goes
 * through it), and by the scheduler to a task that still lacks them (tasks created before that).
 *
 * Catch-up bound: after downtime the spec dispatches run after run while next_run_date is not later
 * than now. A task may bound that with the field `max_catchup_runs` (default 100): when more runs
 * than that are due, logical_date and next_run_date skip ahead to the latest due run (the newest
 * cron fire not later than now, and not after end_date), so one run covers the gap instead of
 * hundreds. The two dates move by the same number of cron steps, so their offset (one step when
 * start_date was not on a fire, none when it was) is kept.
 */

export const DEFAULT_MAX_CATCHUP_RUNS = 100;
const MAX_COUNTED_SKIPS = 10_000;

export interface ScheduleChanges {
  [field: string]: string;
}

export function initialScheduleChanges(task: TaskRecord): ScheduleChanges | null {
  const frequency = task.frequency ?? ADHOC;
  const start = toInstant(task.start_date);
  if (frequency === ADHOC || start === null) return null;
  const changes: ScheduleChanges = {};
  try {
    if (toInstant(task.next_run_date) === null) changes.next_run_date = iso(initialNextRunDate(start, frequency));
    if (toInstant(task.logical_date) === null) changes.logical_date = iso(initialLogicalDate(start, frequency));
  } catch {
    return null; // An invalid frequency is reported by validation (and diagnose), not here.
  }
  return Object.keys(changes).length > 0 ? changes : null;
}

export const maxCatchupRuns = (task: Record<string, unknown>): number => {
  const value = task.max_catchup_runs;
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : DEFAULT_MAX_CATCHUP_RUNS;
};

/** Logical steps from `logical` up to `target` (0, 1 or 2); 0 when they are further apart or misordered. */
const stepsBetween = (logical: Date, target: Date, frequency: string): number => {
  let current = logical;
  for (let steps = 0; steps <= 2; steps += 1) {
    if (current.getTime() === target.getTime()) return steps;
    if (current.getTime() > target.getTime()) return 0;
    current = advanceLogicalDate(current, frequency);
  }
  return 0;
};

/** A lower bound on the time between two consecutive fires of a (valid, scheduled) frequency. */
const minFireSpacingMs = (frequency: string): number => {
  const granularity = cronGranularity(frequency);
  return granularity === 'minute' ? MINUTE_MS : granularity === 'hour' ? 60 * MINUTE_MS : 24 * 60 * MINUTE_MS;
};

export interface CatchUp {
  changes: ScheduleChanges;
  /** Due runs left out (counted up to 10,000). */
  skipped: number;
}

export function catchUpChanges(task: TaskRecord & Record<string, unknown>, now: Date): CatchUp | null {
  try {
    return catchUp(task, now);
  } catch {
    return null; // An invalid frequency is reported by validation (and diagnose), not here.
  }
}

function catchUp(task: TaskRecord & Record<string, unknown>, now: Date): CatchUp | null {
  const frequency = task.frequency ?? ADHOC;
  const next = toInstant(task.next_run_date);
  const logical = toInstant(task.logical_date);
  if (frequency === ADHOC || next === null || logical === null || next.getTime() > now.getTime()) return null;
  // 0 and 1 both mean "only the latest due run".
  const bound = Math.max(maxCatchupRuns(task), 1);
  const end = toInstant(task.end_date);
  const horizon = end !== null && end.getTime() < now.getTime() ? end : now;
  // Counting the due runs costs a cron parse per run. Consecutive fires are at least one granularity
  // step apart (a minute; an hour when the cron has one minute value; a day when it also has one hour
  // value), so a gap of m steps holds at most m + 2 runs counting next_run_date itself (which may be
  // off the grid): a task a few runs behind, every cycle's case, needs no counting at all.
  if (Math.floor((horizon.getTime() - next.getTime()) / minFireSpacingMs(frequency)) + 2 <= bound) return null;
  let due = 0;
  for (let fire = next; fire.getTime() <= horizon.getTime() && due <= bound; fire = nextCronDate(frequency, fire)) due += 1;
  if (due <= bound) return null;
  const latest = previousOrSameCronDate(frequency, horizon);
  if (latest.getTime() <= next.getTime()) return null;
  let newLogical = floorToGranularity(latest, frequency);
  for (let lag = stepsBetween(logical, floorToGranularity(next, frequency), frequency); lag > 0; lag -= 1) {
    newLogical = floorToGranularity(previousCronDate(frequency, newLogical), frequency);
  }
  let skipped = 0;
  // Counted for the log line only; capped so a minutely task down for a year does not stall the cycle.
  for (let fire = next; fire.getTime() < latest.getTime() && skipped < MAX_COUNTED_SKIPS; fire = nextCronDate(frequency, fire)) skipped += 1;
  return { changes: { next_run_date: iso(latest), logical_date: iso(newLogical) }, skipped };
}
