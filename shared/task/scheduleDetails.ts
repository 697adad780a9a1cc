/**
 * The 422 details of a task's schedule (spec 4.2, POST /task/run) and the fields each is about.
 * Free of imports: the console bundles it to show a detail beside the fields it is about.
 */

export const INVALID_CRON_PREFIX = 'invalid cron expression: ';
export const DATES_REQUIRED_DETAIL = 'start_date and end_date required for scheduled tasks';
export const END_BEFORE_START_DETAIL = 'end_date must be greater than or equal to start_date';

export type ScheduleField = 'frequency' | 'start_date' | 'end_date';

/** The fields a 422 detail is about: none when it is not a schedule detail. */
export const scheduleFieldsOf = (detail: unknown): ScheduleField[] => {
  if (typeof detail !== 'string') return [];
  if (detail.startsWith(INVALID_CRON_PREFIX)) return ['frequency'];
  if (detail === DATES_REQUIRED_DETAIL) return ['start_date', 'end_date'];
  if (detail === END_BEFORE_START_DETAIL) return ['end_date'];
  return [];
};
