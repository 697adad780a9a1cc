import type { Doc, FindOptions, IndexSpec } from '../../shared/read-store/ReadStore.ts';
import { UniqueIndexViolationError } from './UniqueIndexViolationError.ts';

export type Where = NonNullable<FindOptions['where']>;

/**
 * Ids holding one key. A lone id is kept as a bare string: unique and high-cardinality indexes
 * would otherwise allocate a Set per document, which at a million documents costs more time
 * and memory than the documents themselves.
 */
type Bucket = string | Set<string>;

/** Ids answering a lookup, and how many there are without walking them. */
export interface Hits {
  ids: Iterable<string>;
  size: number;
}

/**
 * Equality index: JSON-encoded tuple of the indexed values -> ids holding it.
 * A missing field encodes as null, so `where: { field: null }` finds documents that lack the
 * field as well as those holding null, which is what MongoDB does too.
 */
export class HashIndex {
  readonly fields: ReadonlyArray<string>;
  private readonly partial: ReadonlyArray<readonly [string, string | number | boolean]>;
  private isUnique: boolean;
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly collection: string,
    spec: IndexSpec,
  ) {
    this.fields = [...spec.fields];
    this.partial = Object.entries(spec.partial ?? {});
    this.isUnique = spec.unique === true;
  }

  get unique(): boolean {
    return this.isUnique;
  }

  /**
   * True when every indexed field has an equality in `where`, and `where` asks for the partial
   * index's own values (a partial index knows nothing of other documents): the bucket answers it.
   */
  covers(where: Where): boolean {
    return this.fields.every((field) => Object.hasOwn(where, field)) && this.partial.every(([field, value]) => where[field] === value);
  }

  /** Whether the document belongs in this index at all (always, unless the index is partial). */
  private holds(doc: Doc): boolean {
    for (const [field, value] of this.partial) if (doc[field] !== value) return false;
    return true;
  }

  /** Ids whose indexed values equal those of `where`; call only when `covers(where)`. */
  lookup(where: Where): Hits {
    const bucket = this.buckets.get(this.keyOf(where));
    if (bucket === undefined) return { ids: [], size: 0 };
    return typeof bucket === 'string' ? { ids: [bucket], size: 1 } : { ids: bucket, size: bucket.size };
  }

  /** Throws when `doc` would take a key that another document holds. */
  assertAccepts(doc: Doc): void {
    if (!this.isUnique || !this.holds(doc)) return;
    const key = this.keyOf(doc);
    const holder = this.buckets.get(key);
    // A unique index never holds a Set: a second id is refused before it is added.
    if (typeof holder === 'string' && holder !== doc.id) {
      throw new UniqueIndexViolationError(this.collection, this.fields, this.displayKey(doc), holder, doc.id);
    }
  }

  add(doc: Doc): void {
    if (!this.holds(doc)) return;
    const key = this.keyOf(doc);
    const bucket = this.buckets.get(key);
    if (bucket === undefined) this.buckets.set(key, doc.id);
    else if (typeof bucket !== 'string') bucket.add(doc.id);
    else if (bucket !== doc.id) this.buckets.set(key, new Set([bucket, doc.id]));
  }

  remove(doc: Doc): void {
    if (!this.holds(doc)) return;
    const key = this.keyOf(doc);
    const bucket = this.buckets.get(key);
    if (bucket === undefined) return;
    if (typeof bucket === 'string') {
      if (bucket === doc.id) this.buckets.delete(key);
      return;
    }
    bucket.delete(doc.id);
    // Back to a bare id (or nothing): buckets left behind by changed values would pile up.
    if (bucket.size <= 1) {
      const [last] = bucket;
      if (last === undefined) this.buckets.delete(key);
      else this.buckets.set(key, last);
    }
  }

  /**
   * False once any id moved between buckets: until then every bucket lists its ids in the
   * collection's insertion order, which the ordered fast path of MemoryCollection relies on.
   */
  keepsInsertionOrder = true;

  /** Moves the id only when an indexed value changed: most puts touch unindexed fields. */
  replace(previous: Doc, next: Doc): void {
    // Most updates leave every indexed value as it was: comparing values first spares building
    // two keys (a JSON tuple each for compound indexes) per index per update.
    const held = this.holds(previous);
    const holds = this.holds(next);
    if (held && holds) {
      if (this.fields.every((field) => previous[field] === next[field])) return;
      if (this.keyOf(previous) === this.keyOf(next)) return;
    } else if (!held && !holds) {
      return;
    }
    this.keepsInsertionOrder = false;
    this.remove(previous);
    this.add(next);
  }

  /** Fills a new index; throws before it is used if existing documents break uniqueness. */
  build(docs: Iterable<Doc>): void {
    for (const doc of docs) {
      this.assertAccepts(doc);
      this.add(doc);
    }
  }

  /** A later declaration may ask for uniqueness of an index built without it: first check... */
  assertNoDuplicates(): void {
    for (const [key, ids] of this.buckets) {
      if (typeof ids !== 'string') {
        const [existingId = '', rejectedId = ''] = ids;
        throw new UniqueIndexViolationError(this.collection, this.fields, key.startsWith('\u0001') ? JSON.stringify([key.slice(1)]) : key, existingId, rejectedId);
      }
    }
  }

  /** ...then enforce, once every index of the declaration passed its check. */
  makeUnique(): void {
    this.isUnique = true;
  }

  clear(): void {
    this.buckets.clear();
    this.keepsInsertionOrder = true;
  }

  /** The key as errors show it: the JSON tuple, whichever internal form the bucket uses. */
  private displayKey(values: Record<string, unknown>): string {
    return JSON.stringify(this.fields.map((field) => values[field] ?? null));
  }

  private keyOf(values: Record<string, unknown>): string {
    // Hot path of every put: a single string value needs no JSON. The \u0001 prefix cannot start a
    // JSON array, so the two key forms never collide. A single absent, null or boolean value (most
    // of a catalog item's task-only fields) is a constant: the same text JSON.stringify would write.
    if (this.fields.length === 1) {
      const value = values[this.fields[0] as string];
      if (typeof value === 'string') return `\u0001${value}`;
      if (value === undefined || value === null) return '[null]';
      if (typeof value === 'boolean') return value ? '[true]' : '[false]';
    }
    return this.displayKey(values);
  }
}

/** Identity of a declaration: the same fields in the same order (and the same partial values) are the same index. */
export const indexName = (spec: IndexSpec): string => (spec.partial ? JSON.stringify([spec.fields, spec.partial]) : JSON.stringify(spec.fields));
