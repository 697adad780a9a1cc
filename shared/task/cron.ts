import { CronExpressionParser, type CronExpression } from 'cron-parser';

/**
 * Cron math for task schedules (spec 2.4, 3.1, 4.2 rule 3). Pure; every date is UTC and "now" is an argument.
 *
 * - `ADHOC` is always a valid frequency; anything else must be exactly 5 whitespace-separated fields
 *   (minute hour day-of-month month day-of-week) that cron-parser accepts and that fire at least once.
 *   The `H` (hash/jitter) token is rejected: its value would depend on a seed, and schedules must be
 *   deterministic. `L`, `#`, `?`, ranges, steps, lists and month/day names are accepted.
 * - Everything is computed with `tz: 'UTC'`, so daylight saving time never shifts a fire time.
 *
 * Granularity and logical-date flooring (spec 2.4 "floored to cron granularity"):
 * | granularity | when (cron-parser's expanded fields)                                   | floor to            |
 * |-------------|-------------------------------------------------------------------------|---------------------|
 * | minute      | more than one minute value (sub-hourly)                                 | the latest cron fire at or before the date (exact cron minute) |
 * | hour        | one minute value, several hours                                         | start of the hour   |
 * | day         | one minute and hour; several days a month (`*`, lists, ranges, dom+dow)   | midnight            |
 * | week        | one minute and hour; day-of-month `*`; exactly one weekday               | midnight (of the date, not a week start) |
 * | month       | one run day a month (one day-of-month value, or a single `n#k`/`nL` weekday); several months | first of the month |
 * | year        | as month, but a single month                                             | 1 January           |
 *
 * `advanceLogicalDate` moves to the next floored value that holds a cron fire, so `0 0 31 * *` goes
 * Jan 1 -> Mar 1 (no February run) and `0 0 29 2 *` moves from leap year to leap year.
 */

export const ADHOC = 'ADHOC';

export type CronGranularity = 'minute' | 'hour' | 'day' | 'week' | 'month' | 'year';

const MAX_ADVANCE_STEPS = 16;

/** The 5 fields of a frequency, or null when it does not split into exactly 5 non-empty parts. */
export function cronParts(frequency: string): string[] | null {
  if (typeof frequency !== 'string') return null;
  const parts = frequency.trim().split(/\s+/);
  return parts.length === 5 && parts.every((part) => part !== '') ? parts : null;
}

const HASH_TOKEN = /(^|[^a-z])h(?![a-z])/i;

function parseAt(frequency: string, currentDate: Date): CronExpression {
  const parts = cronParts(frequency);
  if (parts === null) throw new RangeError(`invalid cron expression: ${frequency}`);
  if (parts.some((part) => HASH_TOKEN.test(part))) throw new RangeError(`invalid cron expression: ${frequency}`);
  return CronExpressionParser.parse(parts.join(' '), { currentDate, tz: 'UTC' });
}

const validityCache = new Map<string, boolean>();
const VALIDITY_CACHE_LIMIT = 1024;

/**
 * Spec 4.2 rule 3 plus parseability: ADHOC, or 5 parts that cron-parser accepts and that fire at least once.
 * Remembered per expression: a parse costs ~0.3 ms and every run validates (a scheduler cycle of
 * 1,000 due tasks spent ~300 ms here).
 */
export function isValidFrequency(frequency: unknown): boolean {
  if (frequency === ADHOC) return true;
  if (typeof frequency !== 'string') return false;
  const cached = validityCache.get(frequency);
  if (cached !== undefined) return cached;
  let valid: boolean;
  try {
    parseAt(frequency, new Date(Date.UTC(2000, 0, 1))).next();
    valid = true;
  } catch {
    valid = false;
  }
  if (validityCache.size < VALIDITY_CACHE_LIMIT) validityCache.set(frequency, valid);
  return valid;
}

export const isAdhoc = (frequency: unknown): boolean => frequency === ADHOC;

function assertScheduled(frequency: string): void {
  if (frequency === ADHOC) throw new RangeError('ADHOC has no cron schedule');
}

/** The first cron fire strictly after `after`. Throws (RangeError or cron-parser's Error) for ADHOC or an invalid frequency. */
export function nextCronDate(frequency: string, after: Date): Date {
  assertScheduled(frequency);
  return parseAt(frequency, after).next().toDate();
}

/** The first cron fire at or after `at`. */
export function nextOrSameCronDate(frequency: string, at: Date): Date {
  return nextCronDate(frequency, new Date(at.getTime() - 1));
}

/** The latest cron fire strictly before `before`. */
export function previousCronDate(frequency: string, before: Date): Date {
  assertScheduled(frequency);
  return parseAt(frequency, before).prev().toDate();
}

/** The latest cron fire at or before `at`. */
export function previousOrSameCronDate(frequency: string, at: Date): Date {
  return previousCronDate(frequency, new Date(at.getTime() + 1));
}

const granularityCache = new Map<string, CronGranularity>();
const GRANULARITY_CACHE_LIMIT = 1024;

/** See the table at the top of this file. Throws for ADHOC or an invalid frequency. */
export function cronGranularity(frequency: string): CronGranularity {
  assertScheduled(frequency);
  const cached = granularityCache.get(frequency);
  if (cached !== undefined) return cached;
  const granularity = computeGranularity(frequency);
  if (granularityCache.size < GRANULARITY_CACHE_LIMIT) granularityCache.set(frequency, granularity);
  return granularity;
}

function computeGranularity(frequency: string): CronGranularity {
  const fields = parseAt(frequency, new Date(0)).fields;
  const parts = cronParts(frequency) as string[]; // parseAt succeeded: exactly 5 parts
  if (fields.minute.values.length > 1) return 'minute';
  if (fields.hour.values.length > 1) return 'hour';
  const domWildcard = fields.dayOfMonth.isWildcard;
  const dowWildcard = fields.dayOfWeek.isWildcard;
  const yearOrMonth = (): CronGranularity => (fields.month.values.length > 1 ? 'month' : 'year');
  if (domWildcard && dowWildcard) return 'day';
  if (!domWildcard && !dowWildcard) return 'day'; // day-of-month OR day-of-week: several days a month
  if (!domWildcard) return fields.dayOfMonth.values.length > 1 ? 'day' : yearOrMonth();
  const dow = parts[4] as string;
  if (!dow.includes(',') && /[#L]/i.test(dow)) return yearOrMonth(); // `1#1` first Monday, `5L` last Friday
  const weekdays = new Set(fields.dayOfWeek.values.map((value) => (value === 7 ? 0 : value)));
  return weekdays.size === 1 ? 'week' : 'day';
}

function startOfUnit(date: Date, granularity: Exclude<CronGranularity, 'minute'>): Date {
  const y = date.getUTCFullYear();
  const m = date.getUTCMonth();
  const d = date.getUTCDate();
  switch (granularity) {
    case 'hour':
      return new Date(Date.UTC(y, m, d, date.getUTCHours()));
    case 'day':
    case 'week':
      return new Date(Date.UTC(y, m, d));
    case 'month':
      return new Date(Date.UTC(y, m, 1));
    case 'year':
      return new Date(Date.UTC(y, 0, 1));
  }
}

/** Floor `date` to the frequency's granularity (table above). ADHOC dates are returned unchanged. */
export function floorToGranularity(date: Date, frequency: string): Date {
  if (frequency === ADHOC) return new Date(date.getTime());
  const granularity = cronGranularity(frequency);
  return granularity === 'minute' ? previousOrSameCronDate(frequency, date) : startOfUnit(date, granularity);
}

/**
 * The logical date after `logicalDate`: the smallest floored cron fire strictly later than it.
 * One cron step for an aligned logical date; an unaligned one moves to the next unit holding a fire.
 */
export function advanceLogicalDate(logicalDate: Date, frequency: string): Date {
  assertScheduled(frequency);
  let fire = nextOrSameCronDate(frequency, logicalDate);
  for (let step = 0; step < MAX_ADVANCE_STEPS; step += 1) {
    const floored = floorToGranularity(fire, frequency);
    if (floored.getTime() > logicalDate.getTime()) return floored;
    fire = nextCronDate(frequency, fire);
  }
  throw new RangeError(`cron expression does not advance: ${frequency}`);
}

/**
 * The first logical date of a scheduled task: `start_date` floored, moved forward to the first unit that
 * holds a cron fire (a Saturday start of a weekdays schedule starts on Monday, not on the Saturday).
 */
export function initialLogicalDate(startDate: Date, frequency: string): Date {
  assertScheduled(frequency);
  return floorToGranularity(nextOrSameCronDate(frequency, floorToGranularity(startDate, frequency)), frequency);
}

/** The first next_run_date of a scheduled task: the first cron fire at or after start_date. */
export function initialNextRunDate(startDate: Date, frequency: string): Date {
  return nextOrSameCronDate(frequency, startDate);
}
