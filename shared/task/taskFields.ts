import type { TASK_STATES } from '../item-types/schemas/task.ts';
import type { Instant } from './dates.ts';

/** Task fields (spec 2.4) read by the pure task functions. Timestamps as stored (ISO strings) or Dates. */

export type TaskState = (typeof TASK_STATES)[number];

export interface TaskRecord {
  item_type?: string;
  project_laui?: string;
  deleted_at?: Instant;
  frequency?: string;
  start_date?: Instant;
  end_date?: Instant;
  logical_date?: Instant;
  state?: string;
  user_set_state?: string | null;
  total_retries?: number;
  retry_number?: number;
  retry_interval?: number;
  iteration?: number;
  last_run_date?: Instant;
  next_run_date?: Instant;
  latest_heartbeat?: Instant;
  task_instance_start_date?: Instant;
  data_interval_start?: Instant;
  data_interval_end?: Instant;
}

/** The 2.4 defaults of the numeric retry fields, applied when a value is absent or not a number. */
export const retryFields = (task: TaskRecord): { total_retries: number; retry_number: number; retry_interval: number } => ({
  total_retries: typeof task.total_retries === 'number' ? task.total_retries : 0,
  retry_number: typeof task.retry_number === 'number' ? task.retry_number : 0,
  retry_interval: typeof task.retry_interval === 'number' ? task.retry_interval : 1,
});
