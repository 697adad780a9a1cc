import type { AppendResult, StreamAppend } from '../../shared/event-store/EventStore.ts';

/**
 * An append on another stream committed with a decision on the main stream (commit.ts): a
 * connection queue's lease and the leased task's queued_in_redis, or a task's terminal state and
 * the release of its slot. On a store with multi-stream transactions, one commit where there were
 * two in sequence on a run's critical path, and never one without the other; on a store without
 * them, an append of its own, in the order commit.ts documents.
 */
export interface CompanionAppend {
  append: StreamAppend;
  /** Its expected revision came from a cached state, not a read: a conflict on it is not contention. */
  guessed: boolean;
  /** Told the append's result once it is written. */
  committed(result: AppendResult): void;
  /**
   * Written before the main stream's events (a task's terminal state before its slot's release).
   * Without multi-stream transactions it stays written when the main stream's append then
   * conflicts, and the next attempt plans it again on a fresh read: its decision must find itself
   * done there (a state guard such as onlyIfStateIn) rather than write twice.
   */
  first?: boolean;
  /**
   * The same append planned again on a fresh read (null: nothing left to write). Without
   * multi-stream transactions, what a conflict on an append that follows the main stream's costs:
   * the main stream's events are written, so only this one is decided again. Without `again`, that
   * conflict is an error of this append.
   */
  again?(): Promise<CompanionAppend | null>;
  /**
   * Told why an append that follows the main stream's could not be written, on a store without
   * multi-stream transactions: the main stream's events are written, so the commit does not fail
   * for it. Without `failed`, the commit throws the error.
   */
  failed?(error: unknown): void;
}

/**
 * Plans a caller's companions for one attempt's decision on the main stream; `fresh`: read the
 * streams, no cached guess. The caller runs it on the decisions it is handed (queue: QueueRun): the
 * main stream's code never calls it.
 */
export type CompanionPlanner<Event> = (events: ReadonlyArray<Event>, fresh: boolean) => Promise<CompanionAppend[]>;
