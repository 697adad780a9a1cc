import type { BatchWrites, Doc, DocWrite, ReadStore } from '../../shared/read-store/ReadStore.ts';

/**
 * Batched writes made of single ones, for a store without a batch of its own: what a standalone
 * MongoDB does (not atomic, in order). The memory store offers it on request, so the runner's
 * batched path runs in tests without MongoDB; production memory stores write document by document.
 */
export class SequentialBatches implements BatchWrites {
  readonly atomic = false;

  constructor(private readonly store: Pick<ReadStore, 'collection'>) {}

  async getMany(collection: string, ids: ReadonlyArray<string>): Promise<Map<string, Doc>> {
    const docs = this.store.collection(collection);
    const found = new Map<string, Doc>();
    for (const id of ids) {
      const doc = await docs.get(id);
      if (doc) found.set(id, doc);
    }
    return found;
  }

  async commit(writes: ReadonlyArray<DocWrite>): Promise<void> {
    for (const write of writes) {
      const docs = this.store.collection(write.collection);
      if (write.doc === null) await docs.delete(write.id);
      else await docs.put(write.doc);
    }
  }
}
