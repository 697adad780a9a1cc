import type { AnyBulkWriteOperation, ClientSession, MongoClient } from 'mongodb';
import type { BatchWrites, Doc, DocWrite } from '../../../shared/read-store/ReadStore.ts';
import type { CollectionState } from './CollectionState.ts';
import { replacementOf } from './MongoCollection.ts';
import { fromStored, type StoredDoc } from './storedFields.ts';
import { duplicateKeyIndex, refusedWriteIndex, uniqueViolation } from './uniqueViolation.ts';

/**
 * Batched reads and writes for the projection runner. With a replica set (or sharded cluster) a
 * commit is one transaction: the documents of a batch of events and the runner's checkpoint
 * become visible together, or not at all, and a restart resumes exactly where the documents are.
 * A standalone server (or the test double) has no transactions: the writes go one bulk after the
 * other in their order, the checkpoint last, and a crash in between replays events that each
 * document's `_position` then skips.
 */
export class MongoBatches implements BatchWrites {
  constructor(
    readonly atomic: boolean,
    private readonly client: MongoClient,
    private readonly stateOf: (collection: string) => CollectionState,
  ) {}

  async getMany(collection: string, ids: ReadonlyArray<string>): Promise<Map<string, Doc>> {
    const state = this.stateOf(collection);
    await state.allReady();
    const found = new Map<string, Doc>();
    if (ids.length === 0) return found;
    for (const stored of await state.driver.find({ _id: { $in: [...ids] } }).toArray()) {
      const doc = fromStored(stored);
      found.set(doc.id, doc);
    }
    return found;
  }

  async commit(writes: ReadonlyArray<DocWrite>): Promise<void> {
    const runs = consecutiveRuns(writes);
    if (!this.atomic) {
      for (const run of runs) await this.write(run);
      return;
    }
    const session = this.client.startSession();
    try {
      // withTransaction retries the whole callback on transient errors: the writes are
      // replacements and deletes by id, so a retry writes the same end state.
      await session.withTransaction(async () => {
        for (const run of runs) await this.write(run, session);
      });
    } finally {
      await session.endSession();
    }
  }

  private async write(run: ReadonlyArray<DocWrite>, session?: ClientSession): Promise<void> {
    const first = run[0];
    if (!first) return;
    const state = this.stateOf(first.collection);
    await state.allReady();
    const operations: Array<AnyBulkWriteOperation<StoredDoc>> = run.map((write) =>
      write.doc === null
        ? { deleteOne: { filter: { _id: write.id } } }
        : { replaceOne: { filter: { _id: write.id }, replacement: replacementOf(state.name, write.doc), upsert: true } },
    );
    try {
      await state.driver.bulkWrite(operations, { ordered: true, ...(session ? { session } : {}) });
    } catch (error) {
      const index = duplicateKeyIndex(error);
      const refused = run[refusedWriteIndex(error) ?? -1]?.doc;
      if (index === null || !refused) throw error;
      throw await uniqueViolation(state.name, state.driver, state.specOf(index), refused);
    }
  }
}

/** The writes cut where the collection changes: one bulk per run keeps their order. */
const consecutiveRuns = (writes: ReadonlyArray<DocWrite>): DocWrite[][] => {
  const runs: DocWrite[][] = [];
  for (const write of writes) {
    const last = runs[runs.length - 1];
    if (last && last[0]?.collection === write.collection) last.push(write);
    else runs.push([write]);
  }
  return runs;
};
