import type { EventStore, RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { evolveOwned, itemsProjection } from '../../projections/catalog/itemsProjection.ts';
import type { LogFollower } from '../../projections/runner/ProjectionRunner.ts';
import { type FoldCheckpoint as Checkpoint, type FoldCheckpoints, noFoldCheckpoints } from './FoldCheckpoints.ts';

interface StreamFolds {
  /** Every `every` events, oldest first; their maxAt never decreases. */
  checkpoints: Checkpoint[];
  /** The fold of the whole stream as last read. */
  head: Checkpoint;
  /**
   * The head's document is this reader's alone (no snapshot holds it, no read returned it): the
   * next field change is written into it rather than into a copy (evolveOwned).
   */
  headOwned: boolean;
  hardDeleted: boolean;
  /** The catch-up under way, shared by the reads that arrive meanwhile. */
  refreshing: Promise<void> | null;
  /** The kept snapshots have been read back (on the stream's first catch-up in this process). */
  loaded: boolean;
}

const EMPTY: Checkpoint = { revision: -1, maxAt: '', doc: null, hardDeleted: false };
const ITEM_STREAM = 'item-';

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
  /** Where the snapshots outlive the process (a start reads them back); none by default. */
  checkpoints?: FoldCheckpoints;
  /** A snapshot that could not be read or kept (the read goes on folding from the log). */
  onCacheError?(error: unknown): void;
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
 *
 * So that no read pays for a long stream's whole fold, neither the first after a start nor the
 * first after many writes: snapshots are kept in `checkpoints` (DATA_DIR), read back on a stream's
 * first read, and the reader follows the live log (a LogFollower of the projection runner) to fold
 * a stream in the background each time it has grown by `every` events.
 */
export class ItemAsOfReader implements LogFollower {
  readonly handles = itemsProjection.handles;
  private readonly every: number;
  private readonly capacity: number;
  private readonly budget: number;
  private readonly store: FoldCheckpoints;
  private readonly onCacheError: (error: unknown) => void;
  private readonly folds = new Map<string, StreamFolds>();
  private kept = 0;
  /** Streams to fold in the background, in the order they grew; one drain at a time. */
  private readonly toWarm = new Set<string>();
  private warming: Promise<void> | null = null;
  /** Saves of new snapshots, one after the other in the order they were taken. */
  private saving: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly eventStore: EventStore,
    options: AsOfOptions = {},
  ) {
    this.every = Math.max(1, options.every ?? 100);
    this.capacity = Math.max(1, options.streams ?? 2_000);
    this.budget = Math.max(1, options.snapshots ?? 20_000);
    this.store = options.checkpoints ?? noFoldCheckpoints;
    this.onCacheError = options.onCacheError ?? (() => {});
  }

  /**
   * The projection runner's call for each item event applied. A stream whose fold is held here and
   * is at the event's previous revision (nothing being read for it) takes the event at once: the
   * event is already parsed, so the fold costs one evolve and no read of the store (the background
   * fold read `every` events back and parsed them again: ~4% of the event loop under task load).
   * Any other stream that has just grown by `every` events is folded in the background (and its
   * new snapshot kept), so the next as-of read finds it; off the runner's path: the fold waits for a
   * later turn of the event loop.
   */
  follow(event: RecordedEvent): void {
    if (this.stopped || !event.streamId.startsWith(ITEM_STREAM)) return;
    const folds = this.folds.get(event.streamId);
    if (folds && folds.loaded && folds.refreshing === null && event.revision === folds.head.revision + 1) {
      const fresh = this.foldInto(event.streamId, folds, [event]);
      if (fresh.length > 0) this.keep(event.streamId, fresh);
      return;
    }
    if ((event.revision + 1) % this.every !== 0) return;
    this.toWarm.add(event.streamId);
    this.warming ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.drain());
  }

  /** Snapshots taken while following: the bounds kept, then saved. */
  private keep(streamId: string, fresh: Checkpoint[]): void {
    this.evict(streamId);
    void this.save(streamId, fresh);
  }

  /** New snapshots saved after every save asked before them, whichever fold took them (a failure is reported, never thrown). */
  private save(streamId: string, fresh: Checkpoint[]): Promise<void> {
    this.saving = this.saving.then(() => this.store.save(streamId, fresh)).catch(this.onCacheError);
    return this.saving;
  }

  /** Background folds in flight are finished (or given up) and no new one starts. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.toWarm.clear();
    await this.warming;
    await this.saving;
  }

  /** Resolves once the streams waiting for a background fold have been folded (specs, benches). */
  async settled(): Promise<void> {
    while (this.warming) await this.warming;
    await this.saving;
  }

  private async drain(): Promise<void> {
    try {
      for (const streamId of this.toWarm) {
        this.toWarm.delete(streamId);
        if (this.stopped) break;
        // A failed background fold is the next read's to do again; it must not stop the others.
        await this.refreshed(streamId).catch(this.onCacheError);
      }
    } finally {
      this.warming = null;
    }
  }

  /**
   * The item at `at` (an ISO time as `metadata.at` writes it, UTC with milliseconds), or null when
   * it did not exist yet. A hard-deleted item is null at any time: a hard delete is meant to take
   * the item out of every read, and the revisions read refuses it as well.
   */
  async at(laui: Laui, at: string): Promise<ItemDoc | null> {
    const folds = await this.refreshed(`item-${laui}`);
    if (folds.hardDeleted) return null;
    if (folds.head.maxAt <= at) {
      // Handed out: the next event folds into a copy.
      folds.headOwned = false;
      return folds.head.doc;
    }
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

  /** Snapshots held over all streams (the memory bound's measure). */
  get snapshotsKept(): number {
    return this.kept;
  }

  /** A plain fold from the stream's start (no snapshot): the bench's baseline and a check of the snapshots. */
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
      folds = { checkpoints: [], head: EMPTY, headOwned: false, hardDeleted: false, refreshing: null, loaded: false };
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

  /**
   * Folds the events appended since the last read, keeping a snapshot every `every` events; on
   * the stream's first catch-up, from the last snapshot kept in `checkpoints` rather than the start.
   */
  private async catchUp(streamId: string, folds: StreamFolds): Promise<void> {
    if (!folds.loaded) {
      folds.loaded = true;
      const kept = await this.store.load(streamId).catch((error: unknown) => {
        this.onCacheError(error);
        return [];
      });
      // Only snapshots on this reader's grid: another `every` (a changed setting) is folded anew.
      const usable = kept.filter((checkpoint) => (checkpoint.revision + 1) % this.every === 0);
      const last = usable.at(-1);
      if (last && last.revision > folds.head.revision) {
        folds.checkpoints = usable;
        folds.head = last;
        folds.headOwned = false;
        folds.hardDeleted = last.hardDeleted;
        if (this.folds.get(streamId) === folds) this.kept += usable.length;
      }
    }
    const events: RecordedEvent[] = await this.eventStore.readStream(streamId, { fromRevision: folds.head.revision + 1 });
    const fresh = this.foldInto(streamId, folds, events);
    if (fresh.length > 0) await this.save(streamId, fresh);
  }

  /**
   * Folds `events` (the stream's next ones) into the head, a snapshot every `every` events; returns
   * the new snapshots. A head document of its own is changed in place; a snapshot shares it, so the
   * event after a snapshot folds into a copy.
   */
  private foldInto(streamId: string, folds: StreamFolds, events: ReadonlyArray<RecordedEvent>): Checkpoint[] {
    let { doc, maxAt, revision } = folds.head;
    let owned = folds.headOwned;
    const fresh: Checkpoint[] = [];
    for (const event of events) {
      const next = owned ? evolveOwned(doc, event) : itemsProjection.evolve(doc, event);
      // A new document (evolve's copy, a creation) is ours; evolve's `doc` unchanged is as it was.
      owned = next !== null && (next !== doc || owned);
      doc = next;
      if (event.metadata.at > maxAt) maxAt = event.metadata.at;
      revision = event.revision;
      if (event.type === 'ItemHardDeleted') folds.hardDeleted = true;
      if ((revision + 1) % this.every === 0) {
        const checkpoint = { revision, maxAt, doc, hardDeleted: folds.hardDeleted };
        folds.checkpoints.push(checkpoint);
        owned = false;
        fresh.push(checkpoint);
        // A stream evicted while it was being read is no longer counted.
        if (this.folds.get(streamId) === folds) this.kept += 1;
      }
    }
    folds.head = { revision, maxAt, doc, hardDeleted: folds.hardDeleted };
    folds.headOwned = owned;
    return fresh;
  }
}
