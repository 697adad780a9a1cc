import { MongoClient, type Db, type MongoClientOptions } from 'mongodb';
import type { ReadStore, StagedReadStore } from '../../../shared/read-store/ReadStore.ts';
import { MongoCollections, STAGING_PREFIX } from './MongoCollections.ts';
import { MongoStagedStore } from './MongoStagedStore.ts';
import { supportsTransactions } from './topology.ts';

export interface MongoReadStoreOptions {
  /** A MongoDB connection string (`MONGO_URL`); a replica set for atomic batches. */
  url: string;
  /** The database holding the read models (`MONGO_DATABASE`). */
  database: string;
  /** `auto` (default) commits batches in transactions where the deployment has them; `off` never. */
  transactions?: 'auto' | 'off';
  clientOptions?: MongoClientOptions;
}

/**
 * Read models in MongoDB (the distributed mode): one collection per read model, `id` stored as
 * `_id`, indexes from the projections' IndexSpecs, queries mapped to match the memory store
 * exactly (readStoreContract.ts). Several processes share it: a projector writes, API processes
 * read and follow the projector's checkpoint (CheckpointProgress).
 */
export class MongoReadStore extends MongoCollections implements ReadStore {
  constructor(
    client: MongoClient,
    db: Db,
    atomic: boolean,
    private readonly ownsClient: boolean,
  ) {
    super(client, db, atomic, '');
  }

  /**
   * Leftovers of a rebuild that did not finish (a crashed projector) are dropped first: a rebuild
   * always starts from empty collections.
   */
  async rebuild(): Promise<StagedReadStore> {
    const all = await this.db.listCollections({}, { nameOnly: true }).toArray();
    for (const { name } of all) if (name.startsWith(STAGING_PREFIX)) await this.db.dropCollection(name);
    return new MongoStagedStore(this.client, this.db, this.batches.atomic, (name) => this.stateOf(name));
  }

  async close(): Promise<void> {
    if (this.ownsClient) await this.client.close();
  }
}

/** Connects (failing fast when the server cannot be reached) and learns whether transactions exist. */
export const openMongoReadStore = async (options: MongoReadStoreOptions): Promise<MongoReadStore> => {
  // ignoreUndefined: a document holds JSON, where an undefined field is no field (the driver
  // would store null); the memory store answers the same for both.
  const client = new MongoClient(options.url, { ignoreUndefined: true, serverSelectionTimeoutMS: 10_000, ...options.clientOptions });
  await client.connect();
  try {
    const atomic = options.transactions !== 'off' && (await supportsTransactions(client));
    return new MongoReadStore(client, client.db(options.database), atomic, true);
  } catch (error) {
    await client.close();
    throw error;
  }
};
