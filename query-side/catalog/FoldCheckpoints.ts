import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';

/** A stream's fold after its first `revision + 1` events (ItemAsOfReader). */
export interface FoldCheckpoint {
  revision: number;
  /** The latest `metadata.at` of the events folded: the fold holds at any instant from it on. */
  maxAt: string;
  doc: ItemDoc | null;
  /** The stream was hard-deleted at or before `revision`. */
  hardDeleted: boolean;
}

/**
 * Where the as-of reader keeps its fold snapshots beyond the process (embedded: a SQLite file in
 * DATA_DIR, ops/snapshots/SqliteFoldCheckpoints.ts), so that the first as-of read of a long stream
 * after a start reads one snapshot and at most `every` events instead of folding the whole stream.
 * A cache: a snapshot is the deterministic fold of immutable events, so losing any costs a fold,
 * never a wrong answer, and two processes saving the same one agree.
 */
export interface FoldCheckpoints {
  /** Every snapshot kept for the stream, oldest first. */
  load(streamId: string): Promise<FoldCheckpoint[]>;
  /** Keeps these snapshots (later than any kept for the stream); ones already kept are left as they are. */
  save(streamId: string, checkpoints: ReadonlyArray<FoldCheckpoint>): Promise<void>;
}

/** Nothing kept beyond the process: the reader's own memory is all there is (specs, benches' baseline). */
export const noFoldCheckpoints: FoldCheckpoints = {
  load: () => Promise.resolve([]),
  save: () => Promise.resolve(),
};
