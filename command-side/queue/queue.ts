import type { Laui } from '../../shared/ids.ts';
import type { ReleaseReason } from '../../shared/domain-events/queueEvents.ts';

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
  /** An ended run's slot, freed only while its lease is still that session's (`finished` by its worker, `stale` by the reaper). */
  | { kind: 'release_finished'; taskLaui: Laui; sessionId: string; reason?: 'finished' | 'stale'; at: string }
  | { kind: 'remove'; taskLaui: Laui; at: string };

export const queueStream = (connectionLaui: Laui): string => `queue-${connectionLaui}`;
export const NOT_IN_QUEUE = 'Task not found in the connection queue';
