import type { Collection, Doc, FindOptions, IndexSpec } from '../../shared/read-store/ReadStore.ts';
import { compareByField } from './compareByField.ts';
import { firstInOrder } from '../../shared/firstInOrder.ts';
import { DocumentMap, SLOTS, type PendingDocuments } from './DocumentMap.ts';
import { HashIndex, indexName, type Where } from './HashIndex.ts';
import { inRange, OrderedIndex } from './OrderedIndex.ts';

/** Candidates of a query: those an index (or the id) narrowed to, and the equalities left to check. */
interface Selection {
  candidates: Iterable<Doc>;
  size: number;
  remaining: ReadonlyArray<readonly [string, unknown]>;
  /** True when the candidates come in the collection's insertion order. */
  inInsertionOrder: boolean;
}

/**
 * A field whose values strictly increase with insertion (a creation sequence): sorting by it is
 * reading in insertion order, with no sort at all. Tracked from the first query that sorts by it.
 */
interface Sequence {
  holds: boolean;
  last: number;
}

/**
 * One in-memory collection. Stored documents are private copies: callers get clones, so a
 * projection that mutates what it read cannot change the read model behind the store's back.
 */
export class MemoryCollection implements Collection<Doc> {
  // Not readonly: a rebuild's swap moves a staged collection's state into this object (takeOver).
  private docs = new DocumentMap();
  private indexes = new Map<string, HashIndex>();
  private sequences = new Map<string, Sequence>();
  /** Ordered indexes by field: they serve `range` queries. */
  private ordered = new Map<string, OrderedIndex>();
  /** Every declaration that added or changed an index: a rebuild's staged copy starts with them. */
  private specs: IndexSpec[] = [];
  /** Moved on by clear and takeOver: a background index build of the documents before stops. */
  private generation = 0;

  constructor(
    private readonly name: string,
    indexes: ReadonlyArray<IndexSpec> = [],
  ) {
    this.declare(indexes);
  }

  /** Adds indexes not yet present, built over the documents already stored; all or none. */
  declare(specs: ReadonlyArray<IndexSpec>): void {
    const added = new Map<string, HashIndex>();
    const madeUnique: HashIndex[] = [];
    for (const spec of specs) {
      if (spec.ordered === true && spec.fields.length === 1) {
        const field = spec.fields[0] as string;
        if (!this.ordered.has(field)) {
          const index = new OrderedIndex(field);
          index.build(this.docs.values());
          this.ordered.set(field, index);
        }
        continue;
      }
      const name = indexName(spec);
      const existing = this.indexes.get(name) ?? added.get(name);
      if (!existing) {
        const index = new HashIndex(this.name, spec);
        index.build(this.docs.values());
        added.set(name, index);
      } else if (spec.unique === true && !existing.unique) {
        // Still being built after a snapshot's load: completed now, so that the check sees every document.
        if (!existing.ready) {
          for (const doc of this.docs.values()) existing.add(doc);
          existing.ready = true;
        }
        madeUnique.push(existing);
      }
    }
    for (const index of madeUnique) index.assertNoDuplicates();
    for (const index of madeUnique) index.makeUnique();
    for (const [name, index] of added) this.indexes.set(name, index);
    // Query handlers ask for their collection (with its indexes) on every request: keep each once.
    for (const spec of specs) if (!this.specs.some((known) => sameSpec(known, spec))) this.specs.push(spec);
  }

  /** The index declarations this collection holds, for a staged copy of it. */
  declared(): ReadonlyArray<IndexSpec> {
    return this.specs;
  }

  /**
   * A rebuild's swap: this object (the one projections and query handlers hold) takes the staged
   * collection's documents and indexes in one synchronous step; the staged object is left empty.
   */
  takeOver(staged: MemoryCollection): void {
    this.docs = staged.docs;
    this.indexes = staged.indexes;
    this.sequences = staged.sequences;
    this.ordered = staged.ordered;
    this.specs = staged.specs;
    this.generation += 1;
    staged.generation += 1;
    staged.docs = new DocumentMap();
    staged.indexes = new Map();
    staged.sequences = new Map();
    staged.ordered = new Map();
    staged.specs = [];
  }

  async get(id: string): Promise<Doc | null> {
    const doc = this.docs.get(id);
    return doc ? structuredClone(doc) : null;
  }

  async put(doc: Doc): Promise<void> {
    this.store(structuredClone(doc));
  }

  async peek(id: string): Promise<Doc | null> {
    return this.docs.get(id) ?? null;
  }

  async adopt(doc: Doc): Promise<void> {
    this.store(doc);
  }

  private store(next: Doc): void {
    if (typeof next.id !== 'string') throw new TypeError(`A document of ${this.name} needs a string id`);
    // Every unique index is checked before any is touched: a refused put changes nothing.
    for (const index of this.indexes.values()) index.assertAccepts(next);
    const previous = this.docs.get(next.id);
    for (const [field, sequence] of this.sequences) {
      if (!sequence.holds) continue;
      const value = next[field];
      if (previous) {
        if (previous[field] !== value) sequence.holds = false;
      } else if (typeof value === 'number' && value > sequence.last) {
        sequence.last = value;
      } else {
        sequence.holds = false;
      }
    }
    for (const index of this.indexes.values()) {
      if (previous) index.replace(previous, next);
      // An index being built in the background reaches a new document itself (it walks the
      // documents in insertion order, and a new one comes last): its buckets stay in that order.
      else if (index.ready) index.add(next);
    }
    for (const index of this.ordered.values()) {
      // Not ready: built in one pass over the documents as they are then (buildIndexes).
      if (!index.ready) continue;
      if (previous) index.replace(previous, next);
      else index.add(next);
    }
    this.docs.set(next.id, next);
  }

  async delete(id: string): Promise<void> {
    const previous = this.docs.get(id);
    if (!previous) return;
    for (const index of this.indexes.values()) index.remove(previous);
    for (const index of this.ordered.values()) if (index.ready) index.remove(previous);
    this.docs.delete(id);
  }

  async find(options: FindOptions = {}): Promise<Doc[]> {
    // Only the page is copied: the candidates it was cut from may be a million documents.
    return this.stored(options).map((doc) => structuredClone(doc));
  }

  async peekFind(options: FindOptions = {}): Promise<Doc[]> {
    return this.stored(options);
  }

  /** The page of stored documents a find answers (the documents themselves, not copies). */
  private stored(options: FindOptions): Doc[] {
    const skip = checkedCount('skip', options.skip, 0);
    const limit = checkedCount('limit', options.limit, Number.POSITIVE_INFINITY);
    const selection = this.withRange(this.select(options.where), options);
    if (options.sort && selection.inInsertionOrder && this.isSequence(options.sort.field)) {
      // Sorting by a creation sequence is reading in insertion order (reversed for desc).
      const ordered = options.sort.direction === 'asc' ? selection.candidates : [...selection.candidates].reverse();
      return page(matches({ ...selection, candidates: ordered }), skip, limit);
    }
    const matching = matches(selection);
    return options.sort ? sorted(matching, selection.size, options.sort, skip, limit) : page(matching, skip, limit);
  }

  async count(where?: FindOptions['where']): Promise<number> {
    const selection = this.select(where);
    if (selection.remaining.length === 0) return selection.size;
    let count = 0;
    for (const _doc of matches(selection)) count += 1;
    return count;
  }

  /** Whether `field` is a strictly increasing number in insertion order (tracked from now on). */
  private isSequence(field: string): boolean {
    let sequence = this.sequences.get(field);
    if (!sequence) {
      sequence = { holds: true, last: Number.NEGATIVE_INFINITY };
      for (const doc of this.docs.values()) {
        const value = doc[field];
        if (typeof value !== 'number' || value <= sequence.last) {
          sequence.holds = false;
          break;
        }
        sequence.last = value;
      }
      this.sequences.set(field, sequence);
    }
    return sequence.holds;
  }

  /**
   * A range narrows the selection: through an ordered index on its field when the equality index
   * did not already pick a smaller bucket, otherwise as a filter on the selected candidates.
   */
  private withRange(selection: Selection, options: FindOptions): Selection {
    const range = options.range;
    if (!range) return selection;
    const index = this.ordered.get(range.field);
    if (index?.ready === true && selection.size > 64) {
      const where = normalised(options.where);
      return { candidates: this.byIds(index.range(range)), size: selection.size, remaining: entriesExcept(where, []), inInsertionOrder: false };
    }
    const candidates = selection.candidates;
    return {
      ...selection,
      candidates: (function* () {
        for (const doc of candidates) if (inRange(doc[range.field], range)) yield doc;
      })(),
      inInsertionOrder: selection.inInsertionOrder,
    };
  }

  /**
   * The stored documents as they are now, in insertion order (a snapshot's copy: references, taken
   * synchronously; stored documents are replaced on change, never mutated, so they stay as captured).
   */
  capture(): Doc[] {
    return [...this.docs.values()];
  }

  /**
   * A snapshot's documents taken over as they are (no clone, no await per document: a million of
   * them load at start). Unique indexes are kept as they go (they guard every later write); the
   * others are left to `buildIndexes`, and queries do without them until then.
   */
  adoptAll(docs: ReadonlyArray<Doc>): void {
    const unique = this.leaveIndexesToBuild();
    for (const doc of docs) {
      if (typeof doc.id !== 'string' || this.docs.has(doc.id)) {
        this.store(doc);
        continue;
      }
      for (const index of unique) index.assertAccepts(doc);
      for (const index of unique) index.add(doc);
      this.docs.set(doc.id, doc);
    }
  }

  /**
   * A snapshot chunk's documents by their ids, decoded on first access (DocumentMap): a start no
   * longer parses every document. A collection with a unique index takes them decoded (adoptAll):
   * the index guards every later write, so it must hold every key from the start (the users', a
   * few documents); so does a chunk too large to keep undecoded, or one loaded into a collection
   * holding other documents (adoptAll merges them as puts).
   */
  adoptChunk(chunk: PendingDocuments): void {
    if (chunk.ids.length > SLOTS || !this.docs.acceptsPending || [...this.indexes.values()].some((index) => index.unique)) {
      this.adoptAll(chunk.decode());
      return;
    }
    this.leaveIndexesToBuild();
    this.docs.addPending(chunk);
  }

  /** Before a snapshot's documents come in: the indexes but the unique ones are emptied, left to buildIndexes. */
  private leaveIndexesToBuild(): HashIndex[] {
    const unique: HashIndex[] = [];
    for (const index of this.indexes.values()) {
      if (index.unique) unique.push(index);
      else if (index.ready) {
        index.clear();
        index.ready = false;
      }
    }
    for (const index of this.ordered.values()) {
      index.clear();
      index.ready = false;
    }
    // Sequences are found again by the next query that sorts (isSequence walks the documents).
    this.sequences.clear();
    return unique;
  }

  /**
   * Builds the indexes `adoptAll` left out, a slice of documents at a time with a turn of the event
   * loop between slices: the service answers meanwhile, from the indexes that are ready and by
   * scanning for the others. Writes go on too: a changed document moves in the index as usual,
   * a new one is reached by the walk (live over the documents in insertion order).
   */
  async buildIndexes(slice = 20_000): Promise<void> {
    const generation = this.generation;
    // A snapshot's ids into one index first: lookups by id, every write's first step, stop asking each chunk.
    await this.docs.mergeIds();
    if (this.generation !== generation) return;
    const pending = [...this.indexes.values()].filter((index) => !index.ready);
    // Documents still undecoded are decoded by this walk too, a slice at a time, even with no index to build.
    if (pending.length > 0 || this.docs.lazy) {
      let walked = 0;
      for (const doc of this.docs.values()) {
        for (const index of pending) index.add(doc);
        walked += 1;
        if (walked % slice === 0) {
          await new Promise((resolve) => setImmediate(resolve));
          // Cleared or swapped meanwhile: those indexes are ready (empty) or gone.
          if (this.generation !== generation) return;
        }
      }
      for (const index of pending) index.ready = true;
    }
    // After the walk: the documents are decoded by then, so this one synchronous pass does not decode them all at once.
    for (const index of this.ordered.values()) {
      if (!index.ready) index.build(this.docs.values());
    }
  }

  clear(): void {
    this.generation += 1;
    for (const index of this.ordered.values()) {
      index.clear();
      index.ready = true;
    }
    this.sequences.clear();
    this.docs.clear();
    for (const index of this.indexes.values()) {
      index.clear();
      index.ready = true;
    }
  }

  /**
   * The id is the primary key; otherwise the covered index with the most fields gives the
   * smallest bucket to filter. Only a where that no index covers scans every document.
   */
  private select(rawWhere: FindOptions['where']): Selection {
    const where = normalised(rawWhere);
    if (Object.hasOwn(where, 'id')) {
      const id = where.id;
      const doc = typeof id === 'string' ? this.docs.get(id) : undefined;
      return { candidates: doc ? [doc] : [], size: doc ? 1 : 0, remaining: entriesExcept(where, ['id']), inInsertionOrder: true };
    }
    // Bucket sizes are known without walking them: take the covering index with the fewest hits
    // (a pk lookup beats an item_type bucket of a million, whatever their field counts).
    let best: { index: HashIndex; hits: ReturnType<HashIndex['lookup']> } | undefined;
    for (const index of this.indexes.values()) {
      if (!index.ready || !index.covers(where)) continue;
      const hits = index.lookup(where);
      if (!best || hits.size < best.hits.size || (hits.size === best.hits.size && index.fields.length > best.index.fields.length)) {
        best = { index, hits };
      }
    }
    if (!best) {
      const remaining = entriesExcept(where, []);
      // Every candidate is checked against `remaining` (matches): chunks of a snapshot that cannot hold a match are skipped undecoded.
      return { candidates: this.docs.values(remaining), size: this.docs.size, remaining, inInsertionOrder: true };
    }
    return {
      candidates: this.byIds(best.hits.ids),
      size: best.hits.size,
      remaining: entriesExcept(where, best.index.fields),
      inInsertionOrder: best.index.keepsInsertionOrder,
    };
  }

  private *byIds(ids: Iterable<string>): Generator<Doc> {
    for (const id of ids) {
      const doc = this.docs.get(id);
      if (doc) yield doc;
    }
  }
}

const sameSpec = (a: IndexSpec, b: IndexSpec): boolean =>
  indexName(a) === indexName(b) && (a.unique === true) === (b.unique === true) && (a.ordered === true) === (b.ordered === true);

/** JSON has no undefined: an equality on undefined means null, as the MongoDB driver sends it. */
const normalised = (where: FindOptions['where']): Where => {
  const result: Where = {};
  for (const [field, value] of Object.entries(where ?? {})) result[field] = value ?? null;
  return result;
};

const entriesExcept = (where: Where, covered: ReadonlyArray<string>): Array<readonly [string, unknown]> =>
  Object.entries(where).filter(([field]) => !covered.includes(field));

function* matches({ candidates, remaining }: Selection): Generator<Doc> {
  for (const doc of candidates) {
    if (remaining.every(([field, value]) => (doc[field] ?? null) === value)) yield doc;
  }
}

/** Stops reading candidates once the page is full: an unsorted first page is cheap at any size. */
const page = (docs: Iterable<Doc>, skip: number, limit: number): Doc[] => {
  const result: Doc[] = [];
  if (limit === 0) return result;
  let skipped = 0;
  for (const doc of docs) {
    if (skipped < skip) skipped += 1;
    else if (result.push(doc) >= limit) break;
  }
  return result;
};

const sorted = (
  docs: Iterable<Doc>,
  size: number,
  sort: NonNullable<FindOptions['sort']>,
  skip: number,
  limit: number,
): Doc[] => {
  const compare = compareByField(sort);
  const wanted = skip + limit;
  // A heap pays off when the page is small next to the candidates; otherwise one sort is cheaper.
  const ordered = wanted < size / 4 ? firstInOrder(docs, wanted, compare) : [...docs].sort(compare);
  return ordered.slice(skip, wanted);
};

const checkedCount = (name: string, value: number | undefined, fallback: number): number => {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
  return value;
};
