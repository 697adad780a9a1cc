import type { DomainEvent } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';

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

export interface WaitingEntry {
  taskLaui: Laui;
  priority: number;
  sortValues: Record<string, unknown>;
  /** Arrival order, the last tie-breaker. */
  seq: number;
}

export interface RunningEntry {
  taskLaui: Laui;
  dispatchId: string;
  sessionId: string;
  leasedAt: string;
}

export interface QueueState {
  waiting: ReadonlyMap<Laui, WaitingEntry>;
  running: ReadonlyMap<Laui, RunningEntry>;
  arrivals: number;
}

export type SortDict = Record<string, string>;

/**
 * The ids of the leases a dispatch may take, by index. The decision stays a function of its command:
 * the pair at an index is the same whenever it is asked for (a decision made again after a conflict
 * hands out the same ids). An array is one; the handler makes them on first use, since a dispatch
 * may lease up to max_parallelism slots but mostly leases one or none (two UUIDs per possible slot,
 * made twice per run, were a tenth of the event loop's allocations under task load).
 */
export interface LeaseIds {
  readonly length: number;
  at(index: number): { dispatchId: string; sessionId: string } | undefined;
}

export type QueueCommand =
  | { kind: 'enqueue'; taskLaui: Laui; priority: number; sortValues: Record<string, unknown>; at: string }
  /** Lease free slots to the first waiting tasks; `leases` gives the (dispatch id, session id) pairs. */
  | { kind: 'dispatch'; maxParallelism: number; sortDict: SortDict; leases: LeaseIds; at: string }
  /** Finish: only the lease holder (dispatch id) may release; a stale release is ignored. */
  | { kind: 'release'; taskLaui: Laui; dispatchId: string | null; reason: ReleaseReason; at: string }
  /**
   * A run whose task already reached its terminal state may still hold its lease for a moment (the
   * worker writes the state, then leaves the queue): frees that lease, identified by the run's
   * session, so a re-run enqueued after it is not dropped by rule 8. Nothing when it is gone.
   */
  | { kind: 'release_finished'; taskLaui: Laui; sessionId: string; at: string }
  | { kind: 'remove'; taskLaui: Laui; at: string };

export const queueStream = (connectionLaui: Laui): string => `queue-${connectionLaui}`;
export const NOT_IN_QUEUE = 'Task not found in the connection queue';
