import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import type { ReadStore } from '../../../shared/read-store/ReadStore.ts';
import { openMongoReadStore, type MongoReadStoreOptions } from '../../../ops/read-store/mongodb/MongoReadStore.ts';

export interface FreshStores {
  /** A store on a database of its own, dropped when the store is closed. */
  open(options?: Pick<MongoReadStoreOptions, 'transactions'>): Promise<ReadStore>;
  /** Another store (its own client, as a second process) on the database of one `open` gave. */
  attach(store: ReadStore): Promise<ReadStore>;
  close(): Promise<void>;
}

/** Test support: every contract test gets an empty database, and leaves none behind. */
export const freshStores = async (url: string): Promise<FreshStores> => {
  const admin = new MongoClient(url);
  await admin.connect();
  const databases = new WeakMap<ReadStore, string>();
  return {
    async open(options = {}) {
      const database = `rs_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
      const store = await openMongoReadStore({ url, database, ...options });
      const close = store.close.bind(store);
      const fresh = Object.assign(store, {
        close: async () => {
          // Cleanup of a database no other test uses: mongo-java-server sometimes fails to drop one
          // holding a partial unique index ("Expected [MemoryUniqueIndex...] to be empty"), which is
          // the double's bug, not the store's. The store is closed either way.
          await admin
            .db(database)
            .dropDatabase()
            .catch(() => undefined);
          await close();
        },
      });
      databases.set(fresh, database);
      return fresh;
    },
    attach: async (store) => {
      const database = databases.get(store);
      if (!database) throw new Error('attach takes a store that open gave');
      return openMongoReadStore({ url, database });
    },
    close: () => admin.close(),
  };
};
