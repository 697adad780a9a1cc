import type { BatchWrites, Collection, Doc, IndexSpec, ReadStore, StagedReadStore } from '../../shared/read-store/ReadStore.ts';
import type { PendingDocuments } from './DocumentMap.ts';
import { MemoryCollection } from './MemoryCollection.ts';
import { MemoryStagedStore } from './MemoryStagedStore.ts';
import { SequentialBatches } from './SequentialBatches.ts';

export { UniqueIndexViolationError } from './UniqueIndexViolationError.ts';

/**
 * Read models of the embedded mode: rebuilt from the event log at start, so nothing here is
 * persisted. Indexes are hash indexes over equality, the only kind of filter the port offers,
 * which keeps lookups flat at a million documents.
 */
export class MemoryReadStore implements ReadStore {
  private readonly collections = new Map<string, MemoryCollection>();
  /**
   * Absent by default: in memory a write per document is the fastest path. Tests ask for
   * `{ batches: true }` to run the projection runner's batched path (MongoDB's) without MongoDB.
   */
  readonly batches?: BatchWrites;

  constructor(options: { batches?: boolean } = {}) {
    if (options.batches === true) this.batches = new SequentialBatches(this);
  }

  /**
   * Same name, same object: projections and query handlers that ask separately share the data.
   * Indexes named on a later call are added and built over what is already stored.
   */
  collection<T extends Doc = Doc>(name: string, indexes: ReadonlyArray<IndexSpec> = []): Collection<T> {
    let collection = this.collections.get(name);
    if (collection) collection.declare(indexes);
    else {
      collection = new MemoryCollection(name, indexes);
      this.collections.set(name, collection);
    }
    // The store holds JSON documents of any shape; T is the caller's word for what it put there.
    return collection as unknown as Collection<T>;
  }

  /** Fresh collections, swapped in by moving their state into the objects handed out here. */
  async rebuild(): Promise<StagedReadStore> {
    return new MemoryStagedStore(this.collections);
  }

  /**
   * Every collection's documents at this instant (ops/snapshots): one synchronous pass, so no event
   * is half applied in what is captured; a snapshot holds this and the runner's position.
   */
  capture(): Map<string, Doc[]> {
    return new Map([...this.collections].map(([name, collection]) => [name, collection.capture()]));
  }

  /**
   * A snapshot chunk's documents (captured by `capture`) by their ids, decoded on first access
   * (MemoryCollection.adoptChunk: at once into a collection with a unique index): what a start from
   * a snapshot loads, so that it does not parse every document before it is ready. Unique indexes
   * hold them at once, the others wait for `buildIndexes` (queries are answered without them until then).
   */
  restoreChunk(name: string, chunk: PendingDocuments): void {
    (this.collection(name) as unknown as MemoryCollection).adoptChunk(chunk);
  }

  /** The indexes that `restoreChunk` left out, built collection by collection while the service serves. */
  async buildIndexes(): Promise<void> {
    for (const collection of [...this.collections.values()]) await collection.buildIndexes();
  }

  /** Empties every collection but keeps them and their indexes: projections hold references. */
  async clear(): Promise<void> {
    for (const collection of this.collections.values()) collection.clear();
  }

  async close(): Promise<void> {}
}
