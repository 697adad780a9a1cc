import type { AppendResult, StreamAppend } from '../../shared/event-store/EventStore.ts';

/**
 * An append on another stream that commits in the same transaction as a decision on the main
 * stream (stores with appendAtomically): a connection queue's lease and the leased task's
 * queued_in_redis, or a task's terminal state and the release of its slot. One commit where there
 * were two in sequence on a run's critical path, and never one without the other.
 */
export interface CompanionAppend {
  append: StreamAppend;
  /** Its expected revision came from a cached state, not a read: a conflict on it is not contention. */
  guessed: boolean;
  /** Told the append's result once the transaction committed. */
  committed(result: AppendResult): void;
  /** Written before the main stream's events (a task's terminal state before its slot's release). */
  first?: boolean;
}

/** Plans a request's companions for one attempt's decision; `fresh`: read the streams, no cached guess. */
export type CompanionPlanner<Event> = (events: ReadonlyArray<Event>, fresh: boolean) => Promise<CompanionAppend[]>;
