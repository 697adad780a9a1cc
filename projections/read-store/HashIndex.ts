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

type Primitive = string | number | boolean | null;

/**
 * One level of the index per indexed field, keyed by the field's value itself: the document's own
 * string is the key, so an index costs a map entry per document and no key of its own (a key text
 * per document and index was a third of the read models' memory at a million items, and most of
 * a snapshot load's time). Objects and arrays, rare as indexed values, are keyed by their JSON in
 * a map of their own, so that they never meet a string of the same text.
 */
class Level<T> {
  readonly values = new Map<Primitive, T>();
  objects: Map<string, T> | null = null;

  get(value: unknown): T | undefined {
    return isObject(value) ? this.objects?.get(JSON.stringify(value)) : this.values.get(primitive(value));
  }

  set(value: unknown, entry: T): void {
    if (isObject(value)) (this.objects ??= new Map()).set(JSON.stringify(value), entry);
    else this.values.set(primitive(value), entry);
  }

  delete(value: unknown): void {
    if (isObject(value)) this.objects?.delete(JSON.stringify(value));
    else this.values.delete(primitive(value));
  }

  get size(): number {
    return this.values.size + (this.objects?.size ?? 0);
  }

  /** Entries with their values as a document holds them (an object's JSON parsed back). */
  *entries(): Generator<[unknown, T]> {
    yield* this.values;
    for (const [json, entry] of this.objects ?? []) yield [JSON.parse(json) as unknown, entry];
  }
}

const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null;
/** JSON has no undefined: a missing field and null share the null bucket, as in MongoDB. */
const primitive = (value: unknown): Primitive => (value === undefined ? null : (value as Primitive));
const sameKey = (a: unknown, b: unknown): boolean =>
  primitive(a) === primitive(b) || (isObject(a) && isObject(b) && JSON.stringify(a) === JSON.stringify(b));

/**
 * Equality index: the indexed values, field by field (nested levels for compound indexes) -> ids
 * holding them. A missing field counts as null, so `where: { field: null }` finds documents that
 * lack the field as well as those holding null, which is what MongoDB does too.
 */
export class HashIndex {
  readonly fields: ReadonlyArray<string>;
  private readonly partial: ReadonlyArray<readonly [string, string | number | boolean]>;
  private isUnique: boolean;
  /** Nested Levels, one per field but the last; the last level holds the buckets. */
  private root = new Level<unknown>();
  /**
   * False while a snapshot's documents are being indexed in the background (MemoryCollection):
   * queries do not use the index meanwhile, and new documents are left to the builder.
   */
  ready = true;

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

  /** The level holding the buckets of these values' last field (created on the way when asked). */
  private leaf(values: Record<string, unknown>, create: boolean): Level<Bucket> | undefined {
    let level = this.root;
    for (let at = 0; at < this.fields.length - 1; at += 1) {
      const value = values[this.fields[at] as string];
      let next = level.get(value) as Level<unknown> | undefined;
      if (next === undefined) {
        if (!create) return undefined;
        next = new Level<unknown>();
        level.set(value, next);
      }
      level = next;
    }
    return level as Level<Bucket>;
  }

  private lastValue(values: Record<string, unknown>): unknown {
    return values[this.fields[this.fields.length - 1] as string];
  }

  private bucketOf(values: Record<string, unknown>): Bucket | undefined {
    return this.leaf(values, false)?.get(this.lastValue(values));
  }

  /** Ids whose indexed values equal those of `where`; call only when `covers(where)`. */
  lookup(where: Where): Hits {
    const bucket = this.bucketOf(where);
    if (bucket === undefined) return { ids: [], size: 0 };
    return typeof bucket === 'string' ? { ids: [bucket], size: 1 } : { ids: bucket, size: bucket.size };
  }

  /** Throws when `doc` would take a key that another document holds. */
  assertAccepts(doc: Doc): void {
    if (!this.isUnique || !this.holds(doc)) return;
    const holder = this.bucketOf(doc);
    // A unique index never holds a Set: a second id is refused before it is added.
    if (typeof holder === 'string' && holder !== doc.id) {
      throw new UniqueIndexViolationError(this.collection, this.fields, this.displayKey(doc), holder, doc.id);
    }
  }

  add(doc: Doc): void {
    if (!this.holds(doc)) return;
    const leaf = this.leaf(doc, true) as Level<Bucket>;
    const value = this.lastValue(doc);
    const bucket = leaf.get(value);
    if (bucket === undefined) leaf.set(value, doc.id);
    else if (typeof bucket !== 'string') bucket.add(doc.id);
    else if (bucket !== doc.id) leaf.set(value, new Set([bucket, doc.id]));
  }

  remove(doc: Doc): void {
    if (!this.holds(doc)) return;
    // The levels on the way, so that one left empty is dropped: levels of changed values would pile up.
    const path: Array<[Level<unknown>, unknown]> = [];
    let level = this.root;
    for (let at = 0; at < this.fields.length - 1; at += 1) {
      const value = doc[this.fields[at] as string];
      const next = level.get(value) as Level<unknown> | undefined;
      if (next === undefined) return;
      path.push([level, value]);
      level = next;
    }
    const leaf = level as Level<Bucket>;
    const value = this.lastValue(doc);
    const bucket = leaf.get(value);
    if (bucket === undefined) return;
    if (typeof bucket === 'string') {
      if (bucket !== doc.id) return;
      leaf.delete(value);
    } else {
      bucket.delete(doc.id);
      // Back to a bare id (or nothing).
      if (bucket.size <= 1) {
        const [last] = bucket;
        if (last === undefined) leaf.delete(value);
        else leaf.set(value, last);
      }
    }
    for (let at = path.length - 1; at >= 0 && level.size === 0; at -= 1) {
      const [parent, key] = path[at] as [Level<unknown>, unknown];
      parent.delete(key);
      level = parent;
    }
  }

  /**
   * False once any id moved between buckets: until then every bucket lists its ids in the
   * collection's insertion order, which the ordered fast path of MemoryCollection relies on.
   */
  keepsInsertionOrder = true;

  /** Moves the id only when an indexed value changed: most puts touch unindexed fields. */
  replace(previous: Doc, next: Doc): void {
    const held = this.holds(previous);
    const holds = this.holds(next);
    if (held && holds) {
      if (this.fields.every((field) => sameKey(previous[field], next[field]))) return;
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
    for (const [values, ids] of this.buckets(this.root, [])) {
      if (typeof ids !== 'string') {
        const [existingId = '', rejectedId = ''] = ids;
        throw new UniqueIndexViolationError(this.collection, this.fields, JSON.stringify(values), existingId, rejectedId);
      }
    }
  }

  private *buckets(level: Level<unknown>, values: unknown[]): Generator<[unknown[], Bucket]> {
    const last = values.length === this.fields.length - 1;
    for (const [value, entry] of level.entries()) {
      if (last) yield [[...values, value], entry as Bucket];
      else yield* this.buckets(entry as Level<unknown>, [...values, value]);
    }
  }

  /** ...then enforce, once every index of the declaration passed its check. */
  makeUnique(): void {
    this.isUnique = true;
  }

  clear(): void {
    this.root = new Level<unknown>();
    this.keepsInsertionOrder = true;
  }

  /** The key as errors show it: the JSON tuple of the indexed values. */
  private displayKey(values: Record<string, unknown>): string {
    return JSON.stringify(this.fields.map((field) => values[field] ?? null));
  }
}

/** Identity of a declaration: the same fields in the same order (and the same partial values) are the same index. */
export const indexName = (spec: IndexSpec): string => (spec.partial ? JSON.stringify([spec.fields, spec.partial]) : JSON.stringify(spec.fields));
