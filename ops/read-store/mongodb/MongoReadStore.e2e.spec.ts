import { expect } from 'chai';
import { describeReadStoreContract } from '../../../test/contracts/readStoreContract.ts';
import { describeProjectionRunnerContract } from '../../../test/contracts/projectionRunnerContract.ts';
import { MemoryEventStore } from '../../../test/support/MemoryEventStore.ts';
import { freshStores, type FreshStores } from '../../../test/support/mongo-double/freshStores.ts';
import { containerRuntimeProblem } from '../../../test/support/containerRuntime.ts';

/** A current MongoDB; @testcontainers/mongodb starts it as a one-member replica set (rs0). */
const MONGO_IMAGE = 'mongo:8.0';

/**
 * The read-store and projection-runner contracts against real MongoDB, a replica set started by
 * testcontainers: transactions exist, so batched commits are atomic; the runner contract runs a
 * second time with transactions off, the path of a standalone server. Without a reachable
 * container runtime the suite is skipped with the reason printed.
 */
describe('MongoReadStore against MongoDB (testcontainers, replica set)', function () {
  this.timeout(300_000);
  let stores: FreshStores | null = null;
  let stopMongo: (() => Promise<unknown>) | null = null;

  before(async function () {
    const problem = await containerRuntimeProblem();
    if (problem !== null) {
      console.log(`      skipped: ${problem}, so no MongoDB`);
      this.skip();
    }
    const { MongoDBContainer } = await import('@testcontainers/mongodb');
    const mongo = await new MongoDBContainer(MONGO_IMAGE).start();
    stopMongo = () => mongo.stop();
    // The member advertises its in-container host name: talk to the mapped port directly.
    stores = await freshStores(`${mongo.getConnectionString()}/?directConnection=true`);
  });

  after(async () => {
    await stores?.close();
    await stopMongo?.();
  });

  const live = (): FreshStores => {
    if (!stores) throw new Error('MongoDB is not running');
    return stores;
  };

  describeReadStoreContract('MongoReadStore on a MongoDB replica set', () => live().open());

  describeProjectionRunnerContract('MongoReadStore on a MongoDB replica set (atomic commits)', {
    events: () => new MemoryEventStore(),
    open: () => live().open(),
    attach: (store) => live().attach(store),
  });

  describeProjectionRunnerContract('MongoReadStore with transactions off (a standalone server)', {
    events: () => new MemoryEventStore(),
    open: () => live().open({ transactions: 'off' }),
    attach: (store) => live().attach(store),
  });

  it('given a replica set, when opened, then batched commits are atomic', async () => {
    const store = await live().open();
    try {
      expect(store.batches?.atomic).to.equal(true);
    } finally {
      await store.close();
    }
  });
});
