import type { Db, MongoClient } from 'mongodb';
import type { BatchWrites, Collection, Doc, IndexSpec } from '../../../shared/read-store/ReadStore.ts';
import { CollectionState } from './CollectionState.ts';
import { MongoBatches } from './MongoBatches.ts';
import { MongoCollection } from './MongoCollection.ts';
import type { StoredDoc } from './storedFields.ts';

/** Prefix of a rebuild's collections: no port name holds a dot, so none can clash with one. */
export const STAGING_PREFIX = 'staging.';

/**
 * Port names are code constants (`items`, `_checkpoints`); refusing anything else keeps them
 * clear of MongoDB's reserved names (`system.*`, `$`) and of the rebuild prefix.
 */
const NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,99}$/;

/**
 * The collections of one database under one prefix: the live read models (no prefix) or a
 * rebuild's staged ones. Holds one CollectionState per name, created on first use.
 */
export abstract class MongoCollections {
  protected readonly states = new Map<string, CollectionState>();
  readonly batches: BatchWrites;

  constructor(
    protected readonly client: MongoClient,
    protected readonly db: Db,
    atomic: boolean,
    protected readonly prefix: string,
  ) {
    this.batches = new MongoBatches(atomic, client, (name) => this.stateOf(name));
  }

  collection<T extends Doc = Doc>(name: string, indexes: ReadonlyArray<IndexSpec> = []): Collection<T> {
    const state = this.stateOf(name);
    // The store holds JSON documents of any shape; T is the caller's word for what it put there.
    return new MongoCollection(state, state.declare(indexes)) as unknown as Collection<T>;
  }

  protected stateOf(name: string): CollectionState {
    let state = this.states.get(name);
    if (!state) {
      if (!NAME.test(name)) throw new TypeError(`Read-store collection names are letters, digits, _ and - (at most 100), got ${JSON.stringify(name)}`);
      state = new CollectionState(name, this.db.collection<StoredDoc>(this.prefix + name), this.prepare(name));
      this.states.set(name, state);
    }
    return state;
  }

  /** Work before a collection's first use (a staged one copies the live indexes). */
  protected prepare(_name: string): Promise<void> {
    return Promise.resolve();
  }

  /** Names of this prefix's collections in the database, known to this process or not. */
  protected async existingNames(): Promise<string[]> {
    // Filtered here: the test double ignores a listCollections filter.
    const all = await this.db.listCollections({}, { nameOnly: true }).toArray();
    return all
      .map((info) => info.name)
      .filter((name) => (this.prefix === '' ? !name.startsWith(STAGING_PREFIX) && !name.startsWith('system.') : name.startsWith(this.prefix)))
      .map((name) => name.slice(this.prefix.length));
  }

  async clear(): Promise<void> {
    const names = new Set([...(await this.existingNames()), ...this.states.keys()]);
    for (const name of names) await this.db.collection(this.prefix + name).deleteMany({});
  }
}
