/**
 * Read models live in named collections of JSON documents keyed by `id`.
 * The embedded adapter keeps them in memory; the distributed one maps a collection to MongoDB.
 * Only equality filters, one sort field and cursors are offered: what an index can serve,
 * so that no query degrades into a scan at a million documents.
 */
export type Doc = { id: string } & Record<string, unknown>;

export interface IndexSpec {
  /** Fields that together form the index key; equality lookups on them are served by it. */
  fields: ReadonlyArray<string>;
  unique?: boolean;
  /** An ordered index on its single field: serves `range` queries (documents without a value are left out). */
  ordered?: boolean;
  /**
   * A partial index (MongoDB's partialFilterExpression with equalities): only documents holding
   * every one of these values are indexed, and only a `where` naming the same values is served by
   * it. For fields most documents do not have: a million catalog items that are not tasks need not
   * sit in the task-only indexes' null buckets.
   */
  partial?: Readonly<Record<string, string | number | boolean>>;
}

/** Inclusive bounds on one field's value; only documents holding a value of the bounds' type match. */
export interface RangeFilter {
  field: string;
  gte?: string | number;
  lte?: string | number;
}

export interface FindOptions {
  /** Field equality; every key must match. Values compare by JSON scalar equality. */
  where?: Record<string, string | number | boolean | null>;
  range?: RangeFilter;
  sort?: { field: string; direction: 'asc' | 'desc' };
  limit?: number;
  skip?: number;
}

export interface Collection<T extends Doc = Doc> {
  get(id: string): Promise<T | null>;
  put(doc: T): Promise<void>;
  delete(id: string): Promise<void>;
  find(options?: FindOptions): Promise<T[]>;
  count(where?: FindOptions['where']): Promise<number>;
  /**
   * The projection runner's fast path, where copies would dominate a rebuild: `peek` returns the
   * stored document itself (the caller must not mutate it; evolve is pure) and `adopt` stores the
   * given object without a copy (the caller gives it up). Serialising adapters alias get and put.
   */
  peek(id: string): Promise<T | null>;
  /** `find` answering the stored documents themselves, for readers that only read them (a listing's views copy what they show). */
  peekFind(options?: FindOptions): Promise<T[]>;
  adopt(doc: T): Promise<void>;
}

/** One write of a batch: the document's new state, or null to delete it. */
export interface DocWrite {
  collection: string;
  id: string;
  doc: Doc | null;
}

/**
 * Batched writes, for stores where a round trip per document would dominate a replay (MongoDB):
 * the projection runner then reads the documents of many events at once and writes what they
 * became together with its checkpoint. Stores without it (memory) get one call per document.
 */
export interface BatchWrites {
  /**
   * True when `commit` applies all of its writes or none (a MongoDB replica set's transaction):
   * a checkpoint committed with the documents then says exactly what the documents hold.
   */
  readonly atomic: boolean;
  /** The stored documents of these ids (ids without one are absent from the map). */
  getMany(collection: string, ids: ReadonlyArray<string>): Promise<Map<string, Doc>>;
  /**
   * Applies the writes: all or none when `atomic`; otherwise one after the other in the given
   * order, so that the last write (the checkpoint) lands after every other has. A unique-index
   * violation rejects with UniqueIndexViolationError.
   */
  commit(writes: ReadonlyArray<DocWrite>): Promise<void>;
}

/**
 * Fresh, empty collections for a rebuild, invisible to the live store's readers until `swap`.
 * Collections it was asked for start with the live collection's indexes.
 */
export interface StagedReadStore extends ReadStore {
  /**
   * Puts every staged collection in place of the live one of the same name (live handles then
   * read the rebuilt data); live collections that were not staged stay as they are. Where the
   * store cannot swap all at once (MongoDB renames one collection at a time), collections go in
   * the order they were first asked for: the projection runner asks for its checkpoints after
   * its read models, so no reader sees a checkpoint ahead of the models it covers.
   */
  swap(): Promise<void>;
  /** Abandons the rebuild: the staged collections are dropped and the live ones untouched. */
  discard(): Promise<void>;
}

export interface ReadStore {
  collection<T extends Doc = Doc>(name: string, indexes?: ReadonlyArray<IndexSpec>): Collection<T>;
  /** Present where writes are better batched; see BatchWrites. */
  readonly batches?: BatchWrites;
  /** Starts a rebuild into fresh collections; see StagedReadStore. One rebuild at a time. */
  rebuild(): Promise<StagedReadStore>;
  /** Empties every collection (indexes stay). */
  clear(): Promise<void>;
  close(): Promise<void>;
}
