import type { Doc } from '../../shared/read-store/ReadStore.ts';

/** A snapshot chunk's documents, not decoded yet (ops/snapshots). */
export interface PendingDocuments {
  /** Their ids, in the order `decode` returns the documents. */
  ids: ReadonlyArray<string>;
  /** Fields that every document of the chunk holds, with every value they take there: a scan skips the chunk when its equality is none of them. */
  values: ReadonlyMap<string, ReadonlyArray<unknown>>;
  decode(): Doc[];
}

/** Slots per chunk in a merged id's number: chunk × SLOTS + slot stays a small integer (no heap number per entry). */
export const SLOTS = 1 << 16;

interface Chunk {
  ids: ReadonlyArray<string>;
  values: PendingDocuments['values'];
  decode: (() => Doc[]) | null;
  /** Null until decoded; then each slot's document as it is now, null once deleted. */
  docs: Array<Doc | null> | null;
  /** Its ids' slots until they are merged into `DocumentMap.merged` (mergeIds). */
  slotOf: Map<string, number> | null;
}

/**
 * A collection's documents by id, read as a Map (insertion order, a changed document keeps its
 * place, a deleted one written again goes last), where the documents of a snapshot may still be
 * undecoded (issue 35: a start from a million-item snapshot parsed two million documents and moved
 * them through the garbage collector before it could answer, then put their ids in one Map).
 *
 * A snapshot's documents (`addPending`, into an empty collection) are held as its chunks, in order,
 * ahead of `tail`, the Map of every document written since. A chunk is decoded whole on its first
 * access (and before any write to one of its documents), once. Its ids go into a Map of its own at
 * load, a few times faster than one Map of two million (which thrashes the cache as it grows), and
 * are merged into one id index in the background (mergeIds): until then a lookup asks each chunk.
 * Without a snapshot, every call goes straight to `tail`.
 */
export class DocumentMap {
  private chunks: Chunk[] = [];
  /** Documents of the chunks not deleted. */
  private live = 0;
  /** Chunks not decoded yet. */
  private pending = 0;
  /** Id -> chunk × SLOTS + slot, for the chunks before `mergedUpTo`. */
  private merged = new Map<string, number>();
  private mergedUpTo = 0;
  private tail = new Map<string, Doc>();

  get size(): number {
    return this.live + this.tail.size;
  }

  /** Whether some documents are still undecoded. */
  get lazy(): boolean {
    return this.pending > 0;
  }

  /** Whether a snapshot's chunks can come in: nothing was written besides them (their ids are then known to be new). */
  get acceptsPending(): boolean {
    return this.tail.size === 0;
  }

  get(id: string): Doc | undefined {
    const doc = this.tail.get(id);
    if (doc !== undefined || this.chunks.length === 0) return doc;
    const code = this.locate(id);
    return code === undefined ? undefined : (this.docsOf(code)[code % SLOTS] ?? undefined);
  }

  has(id: string): boolean {
    if (this.tail.has(id)) return true;
    if (this.chunks.length === 0) return false;
    const code = this.locate(id);
    if (code === undefined) return false;
    const docs = (this.chunks[Math.floor(code / SLOTS)] as Chunk).docs;
    return docs === null || docs[code % SLOTS] !== null;
  }

  set(id: string, doc: Doc): void {
    if (this.chunks.length > 0 && !this.tail.has(id)) {
      const code = this.locate(id);
      const docs = code === undefined ? null : this.docsOf(code);
      // A snapshot's document changed: in its place. Deleted before: written again, it goes last.
      if (code !== undefined && docs !== null && docs[code % SLOTS] !== null) {
        docs[code % SLOTS] = doc;
        return;
      }
    }
    this.tail.set(id, doc);
  }

  delete(id: string): void {
    if (this.tail.delete(id) || this.chunks.length === 0) return;
    const code = this.locate(id);
    if (code === undefined) return;
    const docs = this.docsOf(code);
    if (docs[code % SLOTS] === null) return;
    docs[code % SLOTS] = null;
    this.live -= 1;
  }

  clear(): void {
    this.chunks = [];
    this.live = 0;
    this.pending = 0;
    this.merged = new Map();
    this.mergedUpTo = 0;
    this.tail.clear();
  }

  /**
   * The documents in insertion order, decoding chunks as the walk reaches them (live: writes during
   * the walk are seen as a Map's iteration sees them). With `where` (equalities the caller checks on
   * every document anyway), an undecoded chunk whose shared values show that none of its documents
   * can match is skipped undecoded: a scan before the background index build (the cron's look for
   * system configs among a million payloads) decodes nothing it does not need.
   */
  values(where: ReadonlyArray<readonly [string, unknown]> = []): Iterable<Doc> {
    // Without a snapshot's chunks: the Map's own iterator, the fast path of scans.
    if (this.chunks.length === 0) return this.tail.values();
    return this.walk(where);
  }

  private *walk(where: ReadonlyArray<readonly [string, unknown]>): Generator<Doc> {
    const chunks = this.chunks;
    for (let index = 0; index < chunks.length && chunks === this.chunks; index += 1) {
      const chunk = chunks[index] as Chunk;
      if (chunk.docs === null && where.some(([field, value]) => chunk.values.get(field)?.includes(value) === false)) continue;
      const docs = chunk.docs ?? this.decode(chunk);
      for (const doc of docs) if (doc !== null) yield doc;
    }
    yield* this.tail.values();
  }

  /**
   * A snapshot chunk's documents by their ids alone, decoded on first access. Only while nothing was
   * written besides a snapshot's chunks (acceptsPending): a snapshot holds each id once (captured
   * from a Map; its CRC guards the bytes), so its ids are then known to be new.
   */
  addPending({ ids, values, decode }: PendingDocuments): void {
    if (ids.length > SLOTS) throw new RangeError(`a chunk of ${ids.length} documents (at most ${SLOTS} are kept undecoded)`);
    if (!this.acceptsPending) throw new Error('a snapshot chunk loaded into a collection that holds other documents');
    const slotOf = new Map<string, number>();
    for (let slot = 0; slot < ids.length; slot += 1) slotOf.set(ids[slot] as string, slot);
    if (slotOf.size !== ids.length) throw new Error('a snapshot chunk that holds an id twice');
    this.chunks.push({ ids, values, decode, docs: null, slotOf });
    this.live += ids.length;
    this.pending += 1;
  }

  /**
   * Merges the chunks' ids into one index, a chunk at a time with a turn of the event loop every
   * `perTurn` chunks (after ready: a lookup meanwhile asks the chunks not merged yet).
   */
  async mergeIds(perTurn = 4): Promise<void> {
    const chunks = this.chunks;
    while (this.mergedUpTo < chunks.length && chunks === this.chunks) {
      const index = this.mergedUpTo;
      const chunk = chunks[index] as Chunk;
      for (let slot = 0; slot < chunk.ids.length; slot += 1) {
        const id = chunk.ids[slot] as string;
        if (this.merged.has(id)) throw new Error(`a snapshot that holds the id ${id} in two chunks`);
        this.merged.set(id, index * SLOTS + slot);
      }
      chunk.slotOf = null;
      this.mergedUpTo = index + 1;
      if (this.mergedUpTo % perTurn === 0) await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private locate(id: string): number | undefined {
    const code = this.merged.get(id);
    if (code !== undefined) return code;
    for (let index = this.mergedUpTo; index < this.chunks.length; index += 1) {
      const slot = (this.chunks[index] as Chunk).slotOf?.get(id);
      if (slot !== undefined) return index * SLOTS + slot;
    }
    return undefined;
  }

  private docsOf(code: number): Array<Doc | null> {
    const chunk = this.chunks[Math.floor(code / SLOTS)] as Chunk;
    return chunk.docs ?? this.decode(chunk);
  }

  /** Decodes a chunk whole, once; its documents must come in the order of its ids. */
  private decode(chunk: Chunk): Array<Doc | null> {
    const decode = chunk.decode;
    if (decode === null) throw new Error('a snapshot chunk decoded twice');
    const docs = decode();
    if (docs.length !== chunk.ids.length || docs.some((doc, slot) => doc.id !== chunk.ids[slot])) {
      throw new Error(`a snapshot chunk whose documents are not the ${chunk.ids.length} its ids list`);
    }
    chunk.docs = docs;
    // Its text (a slice of the file's buffers) can go.
    chunk.decode = null;
    this.pending -= 1;
    return docs;
  }
}
