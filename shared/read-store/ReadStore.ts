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
  adopt(doc: T): Promise<void>;
}

export interface ReadStore {
  collection<T extends Doc = Doc>(name: string, indexes?: ReadonlyArray<IndexSpec>): Collection<T>;
  /** Drops every collection: the start of a rebuild. */
  clear(): Promise<void>;
  close(): Promise<void>;
}
