import { jsonEvent } from '@kurrent/kurrentdb-client';
import { expect } from 'chai';
import { START, UnreadablePositionError, type RecordedEvent } from '../../../shared/event-store/EventStore.ts';
import { KurrentClientModel } from '../../../test/support/kurrentClientModel.ts';
import { anEvent, someEvents, waitUntil } from '../../../test/contracts/eventStore/contractFixtures.ts';
import { describeEventStoreContract } from '../../../test/contracts/eventStoreContract.ts';
import type { ResubscribeSettings } from './catchUpSubscription.ts';
import { KurrentEventStore, openKurrentEventStore } from './KurrentEventStore.ts';
import { maskCredentials } from './maskCredentials.ts';

const FAST: ResubscribeSettings = { attempts: 3, baseMs: 1, maxMs: 200 };

const storeOver = (model: KurrentClientModel, streamPrefix: string): KurrentEventStore => new KurrentEventStore(model.asClient(), { streamPrefix, resubscribe: FAST });

/** A model holding another prefix's streams, so that a prefixed store must leave them out. */
const sharedModel = async (): Promise<KurrentClientModel> => {
  const model = new KurrentClientModel();
  await model.appendToStream('neighbour-s', [jsonEvent({ type: 'ThingHappened', data: { n: -1 } })]);
  return model;
};

/** The message openKurrentEventStore rejects with. */
const openFails = async (connectionString: string, streamPrefix?: string): Promise<string> => {
  try {
    const store = await openKurrentEventStore({ connectionString, streamPrefix });
    await store.close();
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  return expect.fail('expected openKurrentEventStore to reject');
};

describe('openKurrentEventStore (no server needed)', () => {
  it('given a connection string that is not one, when opening, then a message naming the expected form, without the password', async () => {
    const message = await openFails('http://admin:s3cret@localhost:2113');
    expect(message).to.match(/^Not a KurrentDB connection string \(kurrentdb:\/\//);
    expect(message).to.not.include('s3cret');
  });

  it('given nothing listening at the address, when opening, then it fails at once with what to check, not at the first command', async () => {
    // Port 1 on the loopback: refused at once, nothing to wait for.
    const message = await openFails('kurrentdb://admin:s3cret@127.0.0.1:1?tls=false');
    expect(message).to.match(/^KurrentDB did not answer a first read of \$all .*check the address, port, tls= and credentials/);
    expect(message).to.not.include('s3cret');
  });

  it('given a stream prefix starting with $, when opening, then it is refused (it would name system streams)', async () => {
    expect(await openFails('kurrentdb://127.0.0.1:1?tls=false', '$tenant-')).to.match(/would name system streams/);
  });

  it('given texts quoting connection strings, when masked, then passwords are hidden and the rest is kept', () => {
    expect(maskCredentials('Unexpected "x" in kurrentdb://admin:changeit@db-1:2113,db-2:2113?tls=true')).to.equal('Unexpected "x" in kurrentdb://admin:***@db-1:2113,db-2:2113?tls=true');
    expect(maskCredentials('esdb://ops:p/a:ss@db:2113 and kurrentdb://db:2113')).to.equal('esdb://ops:***@db:2113 and kurrentdb://db:2113');
  });
});

/*
 * The contract against a model of the client (test/support/kurrentClientModel.ts): the adapter's
 * own logic (paging, filtering, revisions, conflicts, subscriptions) checked where no server runs.
 * KurrentEventStore.e2e.spec.ts runs the same contract against a real node.
 */
describeEventStoreContract('KurrentEventStore over a model of the KurrentDB client', () => storeOver(new KurrentClientModel(), ''), { appendAtomically: false });
describeEventStoreContract('KurrentEventStore (stream prefix) over a model of the KurrentDB client', async () => storeOver(await sharedModel(), 'contract-'), { appendAtomically: false });

describe('KurrentEventStore over a model of the KurrentDB client', () => {
  it('given a live subscription, when the connection drops twice, then it subscribes again after its last event and every event arrives once', async () => {
    const model = new KurrentClientModel();
    const store = storeOver(model, '');
    try {
      await store.append('s', someEvents(3), 'no_stream');
      const received: RecordedEvent[] = [];
      const errors: unknown[] = [];
      const subscription = store.subscribeToAll({ after: START, onEvent: (event) => void received.push(event), onError: (error) => errors.push(error) });
      await waitUntil(() => received.length === 3, 'the history is received');
      model.dropConnections();
      await store.append('s', [anEvent(3)], 2);
      await waitUntil(() => received.length === 4, 'the event after the first drop is received');
      model.dropConnections();
      await store.append('t', someEvents(2, 4), 'no_stream');
      await waitUntil(() => received.length === 6, 'the events after the second drop are received');
      await subscription.close();
      expect(received.map((event) => event.data.n)).to.deep.equal([0, 1, 2, 3, 4, 5]);
      expect(received.map((event) => event.position)).to.deep.equal((await store.readAll()).map((event) => event.position));
      expect(errors).to.deep.equal([]);
    } finally {
      await store.close();
    }
  });

  it('given pages of $all interleaved with system link events, when reading in pages of 2 after each last position, then every event of ours once, in order', async () => {
    const store = storeOver(await sharedModel(), 'mine-');
    try {
      for (let n = 0; n < 7; n += 1) await store.append(`s-${n % 2}`, [anEvent(n)], 'any');
      const seen: unknown[] = [];
      let after = START;
      for (let page = await store.readAll({ after, maxCount: 2 }); page.length > 0; page = await store.readAll({ after, maxCount: 2 })) {
        expect(page.length).to.be.at.most(2);
        seen.push(...page.map((event) => event.data.n));
        after = page.at(-1)?.position ?? after;
      }
      expect(seen).to.deep.equal([0, 1, 2, 3, 4, 5, 6]);
      expect(after).to.equal(await store.headPosition());
    } finally {
      await store.close();
    }
  });

  it('given a made-up position between two events, when $all is read after it, then UnreadablePositionError (the API answers 400), and positions the store gave read as before', async () => {
    const store = storeOver(await sharedModel(), 'mine-');
    try {
      const first = await store.append('s-0', [anEvent(0)], 'any');
      await store.append('s-0', [anEvent(1)], 0);
      let refused: unknown = null;
      await store.readAll({ after: first.position + 1n }).catch((error: unknown) => (refused = error));
      expect(refused).to.be.instanceOf(UnreadablePositionError);
      expect((refused as UnreadablePositionError).position).to.equal(first.position + 1n);
      expect((await store.readAll({ after: first.position })).map((event) => event.data.n)).to.deep.equal([1]);
    } finally {
      await store.close();
    }
  });
});
