import type { EventStore, RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { itemsProjection } from '../../projections/catalog/itemsProjection.ts';

/** A stream's fold after its first `revision + 1` events, and the latest time among them. */
interface Checkpoint {
  revision: number;
  /** The latest `metadata.at` of the events folded: the fold holds at any instant from it on. */
  maxAt: string;
  doc: ItemDoc | null;
}

interface StreamFolds {
  /** Every `every` events, oldest first; their maxAt never decreases. */
  checkpoints: Checkpoint[];
  /** The fold of the whole stream as last read. */
  head: Checkpoint;
  hardDeleted: boolean;
  /** The catch-up under way, shared by the reads that arrive meanwhile. */
  refreshing: Promise<void> | null;
}

const EMPTY: Checkpoint = { revision: -1, maxAt: '', doc: null };

export interface AsOfOptions {
  /** Events between two snapshots of a stream's fold: what one as-of read folds at most. */
  every?: number;
  /** Streams whose folds are kept, least recently read leaving first. */
  streams?: number;
  /**
   * Snapshots kept over all streams: the memory bound (a task's document is a few KB, so 20,000 is
   * some tens of MB at most); least recently read streams leave first when it is passed.
   */
  snapshots?: number;
}

/**
 * An item as it was at an instant, folded from its own stream with the read model's evolve
 * (itemsProjection), never from the current row. The state at T is the fold of the longest prefix
 * of the stream whose events were all written at or before T (a stream is written in time order;
 * a clock step back cannot make the fold skip an event and take a later one).
 *
 * Bounded cost: the fold is kept every `every` events of a stream (in memory, per stream, LRU), so
 * a read at T starts from the last snapshot at or before T and reads at most `every` events from
 * the store, plus the events appended since the stream was last read. Sound because events are
 * immutable and evolve never mutates a document: a snapshot is exactly the fold up to its revision.
 */
export class ItemAsOfReader {
  private readonly every: number;
  private readonly capacity: number;
  private readonly budget: number;
  private readonly folds = new Map<string, StreamFolds>();
  private kept = 0;

  constructor(
    private readonly eventStore: EventStore,
    options: AsOfOptions = {},
  ) {
    this.every = Math.max(1, options.every ?? 100);
    this.capacity = Math.max(1, options.streams ?? 2_000);
    this.budget = Math.max(1, options.snapshots ?? 20_000);
  }

  /**
   * The item at `at` (an ISO time as `metadata.at` writes it, UTC with milliseconds), or null when
   * it did not exist yet. A hard-deleted item is null at any time: a hard delete is meant to take
   * the item out of every read, and the revisions read refuses it as well.
   */
  async at(laui: Laui, at: string): Promise<ItemDoc | null> {
    const folds = await this.refreshed(`item-${laui}`);
    if (folds.hardDeleted) return null;
    if (folds.head.maxAt <= at) return folds.head.doc;
    const { checkpoints } = folds;
    // The last snapshot that holds at `at`, and the revision the cut lies before (the next one's).
    let low = 0;
    let high = checkpoints.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((checkpoints[middle] as Checkpoint).maxAt <= at) low = middle + 1;
      else high = middle;
    }
    const start = low > 0 ? (checkpoints[low - 1] as Checkpoint) : EMPTY;
    const end = checkpoints[low]?.revision ?? folds.head.revision;
    if (end <= start.revision) return start.doc;
    let doc = start.doc;
    const events = await this.eventStore.readStream(`item-${laui}`, { fromRevision: start.revision + 1, toRevision: end });
    for (const event of events) {
      if (event.metadata.at > at) break;
      doc = itemsProjection.evolve(doc, event);
    }
    return doc;
  }

  /** A plain fold from the stream's start (no snapshot): the bench's baseline and a check of the snapshots. */
  /** Snapshots held over all streams (the memory bound's measure). */
  get snapshotsKept(): number {
    return this.kept;
  }

  async foldFromStart(laui: Laui, at: string): Promise<ItemDoc | null> {
    let doc: ItemDoc | null = null;
    for (const event of await this.eventStore.readStream(`item-${laui}`)) {
      if (event.type === 'ItemHardDeleted') return null;
      if (event.metadata.at > at) break;
      doc = itemsProjection.evolve(doc, event);
    }
    return doc;
  }

  private async refreshed(streamId: string): Promise<StreamFolds> {
    let folds = this.folds.get(streamId);
    if (folds) {
      this.folds.delete(streamId);
    } else {
      folds = { checkpoints: [], head: EMPTY, hardDeleted: false, refreshing: null };
    }
    this.folds.set(streamId, folds);
    while (folds.refreshing) await folds.refreshing;
    const current = folds;
    current.refreshing = this.catchUp(streamId, current).finally(() => {
      current.refreshing = null;
    });
    await current.refreshing;
    this.evict(streamId);
    return current;
  }

  /** Least recently read streams leave until both bounds hold; the one just read stays (its caller holds it anyway). */
  private evict(keep: string): void {
    for (const [streamId, folds] of this.folds) {
      if (this.folds.size <= this.capacity && this.kept <= this.budget) return;
      if (streamId === keep) continue;
      this.folds.delete(streamId);
      this.kept -= folds.checkpoints.length;
    }
  }

  /** Folds the events appended since the last read, keeping a snapshot every `every` events. */
  private async catchUp(streamId: string, folds: StreamFolds): Promise<void> {
    const events: RecordedEvent[] = await this.eventStore.readStream(streamId, { fromRevision: folds.head.revision + 1 });
    let { doc, maxAt, revision } = folds.head;
    for (const event of events) {
      doc = itemsProjection.evolve(doc, event);
      if (event.metadata.at > maxAt) maxAt = event.metadata.at;
      revision = event.revision;
      if (event.type === 'ItemHardDeleted') folds.hardDeleted = true;
      if ((revision + 1) % this.every === 0) {
        folds.checkpoints.push({ revision, maxAt, doc });
        // A stream evicted while it was being read is no longer counted.
        if (this.folds.get(streamId) === folds) this.kept += 1;
      }
    }
    folds.head = { revision, maxAt, doc };
  }
}
