import type { DomainEvent } from '../events.ts';
import type { Laui } from '../ids.ts';

/**
 * The connection queue, one aggregate per connection (stream `queue-<connection_laui>`). Every
 * decision is appended at the stream's revision, so two dispatchers can never both take the last
 * slot: `max_parallelism` holds under any concurrency. Running entries are leases, released by
 * finish, by reset, or by the reaper when the worker's heartbeat goes stale.
 */
export type QueueEvent =
  | DomainEvent<'TaskEnqueued', { task_laui: Laui } & ArrivalData>
  /**
   * `enqueued`: the task joined the queue in the decision that leased it (its TaskEnqueued is folded
   * into the lease: one event instead of two for a run that finds a free slot, the common case).
   */
  | DomainEvent<'TaskLeased', { task_laui: Laui; dispatch_id: string; session_id: string; at: string; enqueued?: ArrivalData }>
  | DomainEvent<'TaskSlotReleased', { task_laui: Laui; dispatch_id: string; reason: ReleaseReason; at: string }>
  | DomainEvent<'TaskDequeued', { task_laui: Laui; reason: ReleaseReason; at: string }>;

/** A task's arrival in the queue, as TaskEnqueued records it. */
export type ArrivalData = { priority: number; sort_values: Record<string, unknown>; at: string };

export type ReleaseReason = 'finished' | 'stale' | 'reset';
