import { MongoServerError } from 'mongodb';
import type { Collection, Doc, FindOptions } from '../../../shared/read-store/ReadStore.ts';
import type { CollectionState } from './CollectionState.ts';
import { checkedCount, filterOf, sortedPipeline } from './mongoQuery.ts';
import { fromStored, toStored, type StoredDoc } from './storedFields.ts';
import { duplicateKeyIndex, uniqueViolation } from './uniqueViolation.ts';

/** A stored document as a replacement: the id is the filter's, not part of the new body. */
export const replacementOf = (collection: string, doc: Doc): Omit<StoredDoc, '_id'> => {
  const { _id: _ignored, ...replacement } = toStored(collection, doc);
  return replacement;
};

/**
 * A read whose cursor a rebuild's swap cut off: renaming the staged collection over the live one
 * kills the cursors open on the old one (QueryPlanKilled, CursorKilled, CursorNotFound).
 */
const CUT_BY_SWAP = new Set([175, 237, 43]);

/** Runs a read once more if a swap cut it off: the second run reads the rebuilt collection. */
const readAcrossSwap = async <T>(read: () => Promise<T>): Promise<T> => {
  try {
    return await read();
  } catch (error) {
    if (error instanceof MongoServerError && typeof error.code === 'number' && CUT_BY_SWAP.has(error.code)) return read();
    throw error;
  }
};

/**
 * One collection through the port. Every operation first waits for the indexes this handle was
 * declared with (created in the background when the handle was made), so a unique index is in
 * force before the first put that relies on it. Serialising: peek is get and adopt is put.
 */
export class MongoCollection implements Collection<Doc> {
  constructor(
    private readonly state: CollectionState,
    private readonly ready: Promise<void>,
  ) {}

  async get(id: string): Promise<Doc | null> {
    await this.ready;
    const stored = await this.state.driver.findOne({ _id: { $eq: id } });
    return stored ? fromStored(stored) : null;
  }

  async put(doc: Doc): Promise<void> {
    const replacement = replacementOf(this.state.name, doc);
    await this.ready;
    try {
      await this.state.driver.replaceOne({ _id: doc.id }, replacement, { upsert: true });
    } catch (error) {
      const index = duplicateKeyIndex(error);
      if (index === null) throw error;
      throw await uniqueViolation(this.state.name, this.state.driver, this.state.specOf(index), doc);
    }
  }

  async delete(id: string): Promise<void> {
    await this.ready;
    await this.state.driver.deleteOne({ _id: { $eq: id } });
  }

  async find(options: FindOptions = {}): Promise<Doc[]> {
    const skip = checkedCount('skip', options.skip) ?? 0;
    const limit = checkedCount('limit', options.limit);
    const filter = filterOf(options.where, options.range);
    // MongoDB reads a limit of 0 as "no limit"; the port means no document.
    if (limit === 0) return [];
    await this.ready;
    const driver = this.state.driver;
    const sort = options.sort;
    const stored = await readAcrossSwap(() =>
      sort
        ? driver.aggregate<StoredDoc>(sortedPipeline(filter, sort, skip, limit), { allowDiskUse: true }).toArray()
        : driver.find(filter, { ...(skip > 0 ? { skip } : {}), ...(limit !== undefined ? { limit } : {}) }).toArray(),
    );
    return stored.map(fromStored);
  }

  async count(where?: FindOptions['where']): Promise<number> {
    const filter = filterOf(where);
    await this.ready;
    return readAcrossSwap(() => this.state.driver.countDocuments(filter));
  }

  peek(id: string): Promise<Doc | null> {
    return this.get(id);
  }

  peekFind(options?: FindOptions): Promise<Doc[]> {
    return this.find(options);
  }

  adopt(doc: Doc): Promise<void> {
    return this.put(doc);
  }
}
