import type { Doc } from '../../shared/read-store/ReadStore.ts';

/** A snapshot chunk's documents, not decoded yet (ops/snapshots). */
export interface PendingDocuments {
  /** Their ids, in the order `decode` returns the documents. */
  ids: ReadonlyArray<string>;
  /** Fields that every document of the chunk holds, with every value they take there: a scan skips the chunk when its equality is none of them. */
  values: ReadonlyMap<string, ReadonlyArray<unknown>>;
  decode(): Doc[];
}

interface PendingChunk {
  count: number;
  values: PendingDocuments['values'];
  decode: () => Doc[];
}

/** Slots per chunk in a pending entry's number: chunk × SLOTS + slot stays a small integer (no heap number per entry). */
export const SLOTS = 1 << 16;

/**
 * A collection's documents by id, in insertion order, where the documents of a snapshot's chunk
 * may still be undecoded (issue 35: a start from a million-item snapshot parsed two million
 * documents and moved them through the garbage collector before it could answer). Such an entry
 * holds a number, its chunk and slot; the first access to any of the chunk's documents decodes the
 * whole chunk and puts its documents in place of the numbers (a Map keeps an entry's place when
 * its value changes), so that every document is decoded at most once and the map reads as a plain
 * Map of documents. Writes replace entries as before: a document put before its chunk is decoded
 * is simply not overwritten by the decode.
 */
export class DocumentMap {
  private readonly entries = new Map<string, Doc | number>();
  private chunks: Array<PendingChunk | null> = [];
  /** Chunks not decoded yet: none, and every entry is a document. */
  private pending = 0;

  get size(): number {
    return this.entries.size;
  }

  get(id: string): Doc | undefined {
    const entry = this.entries.get(id);
    if (typeof entry !== 'number') return entry;
    const doc = this.decoded(entry);
    if (doc.id !== id) throw new Error('a snapshot document whose id is not the one its chunk lists');
    return doc;
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  set(id: string, doc: Doc): void {
    this.entries.set(id, doc);
  }

  delete(id: string): void {
    this.entries.delete(id);
  }

  clear(): void {
    this.entries.clear();
    this.chunks = [];
    this.pending = 0;
  }

  /**
   * The documents in insertion order, decoding pending chunks as the walk reaches them (live: writes
   * during the walk are seen as a Map's iteration sees them). With `where` (equalities the caller
   * checks on every document anyway), the documents of a pending chunk that cannot match are left
   * out undecoded: a scan before the background index build (the cron's look for system configs
   * among a million payloads) decodes nothing it does not need.
   */
  values(where?: ReadonlyArray<readonly [string, unknown]>): Iterable<Doc> {
    // Every entry is a document once no chunk is pending: the Map's own iterator, the fast path of scans.
    if (this.pending === 0) return this.entries.values() as Iterable<Doc>;
    return this.decodingValues(where ?? []);
  }

  private *decodingValues(where: ReadonlyArray<readonly [string, unknown]>): Generator<Doc> {
    let skipped = -1;
    for (const entry of this.entries.values()) {
      if (typeof entry !== 'number') yield entry;
      else {
        const index = Math.floor(entry / SLOTS);
        if (index === skipped) continue;
        const chunk = this.chunks[index];
        if (chunk && where.length > 0 && where.some(([field, value]) => chunk.values.get(field)?.includes(value) === false)) skipped = index;
        else yield this.decoded(entry);
      }
    }
  }

  /** Whether some documents are still undecoded. */
  get lazy(): boolean {
    return this.pending > 0;
  }

  /**
   * A snapshot chunk's documents by their ids alone, decoded on first access. Throws when an id is
   * already held: a snapshot holds each id once and loads into an empty store, so that is a
   * snapshot (or a load) to refuse, never two documents to merge.
   */
  addPending({ ids, values, decode }: PendingDocuments): void {
    if (ids.length > SLOTS) throw new RangeError(`a chunk of ${ids.length} documents (at most ${SLOTS} are kept undecoded)`);
    const base = this.chunks.length * SLOTS;
    const before = this.entries.size;
    this.chunks.push({ count: ids.length, values, decode });
    this.pending += 1;
    for (let slot = 0; slot < ids.length; slot += 1) this.entries.set(ids[slot] as string, base + slot);
    if (this.entries.size !== before + ids.length) throw new Error('a snapshot chunk holds ids already loaded');
  }

  /** Decodes the chunk of a pending entry, puts its documents in place, and returns the entry's. */
  private decoded(entry: number): Doc {
    const index = Math.floor(entry / SLOTS);
    const base = index * SLOTS;
    const chunk = this.chunks[index];
    // Decoded already, yet the entry still holds its number: the document at that slot had another id than the one written beside it.
    if (chunk === null || chunk === undefined) throw new Error('a snapshot document whose id is not the one its chunk lists');
    const docs = chunk.decode();
    if (docs.length !== chunk.count) throw new Error(`a snapshot chunk of ${docs.length} documents where its ids list ${chunk.count}`);
    this.chunks[index] = null;
    this.pending -= 1;
    for (let slot = 0; slot < docs.length; slot += 1) {
      const doc = docs[slot] as Doc;
      if (this.entries.get(doc.id) === base + slot) this.entries.set(doc.id, doc);
    }
    return docs[entry - base] as Doc;
  }
}
