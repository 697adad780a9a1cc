/**
 * How a worker hands out its slots: `fair` (the service's) takes turns between projects, `fifo`
 * serves the oldest waiting run first, whatever its project (what the bus did before; kept for the
 * bench's baseline only, never a setting).
 */
export type SlotPolicy = 'fair' | 'fifo';

/** What diagnose says of a run a worker holds that waits for one of its slots (WorkerSlots). */
export interface SlotWait {
  since: Date;
  /** Runs the worker starts before this one, as things stand (none arriving meanwhile). */
  ahead: number;
  slots: number;
  running: number;
  policy: SlotPolicy;
}
