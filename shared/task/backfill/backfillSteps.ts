import { advanceLogicalDate, initialLogicalDate } from '../cron.ts';
import { iso } from '../dates.ts';

/** The most runs one backfill may ask for (README: Backfill): a bigger range is split by the caller. */
export const MAX_BACKFILL_STEPS = 1000;
/** max_active_runs is 1 to this (default 1). */
export const MAX_ACTIVE_RUNS_LIMIT = 32;

/**
 * The logical dates of a backfill of [start, end], both inclusive, oldest first: the first is the
 * logical date a schedule starting at `start` would run first (spec 2.4: floored to the cron's
 * granularity, `initialLogicalDate`), then one cron step at a time (`advanceLogicalDate`, the step a
 * successful run moves a schedule by) while not later than `end`. Null when there are more than
 * `limit`: the caller refuses the request before anything is computed for nothing.
 */
export function backfillSteps(frequency: string, start: Date, end: Date, limit: number = MAX_BACKFILL_STEPS): string[] | null {
  const steps: string[] = [];
  for (let date = initialLogicalDate(start, frequency); date.getTime() <= end.getTime(); date = advanceLogicalDate(date, frequency)) {
    if (steps.length === limit) return null;
    steps.push(iso(date));
  }
  return steps;
}

/** The data interval of a step: from its logical date to the next cron step (what the run's pick-up records). */
export const stepIntervalEnd = (frequency: string, logicalDate: string): string => iso(advanceLogicalDate(new Date(logicalDate), frequency));
