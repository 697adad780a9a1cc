import { randomUUID } from 'node:crypto';
import { jsonEvent, KurrentDBClient } from '@kurrent/kurrentdb-client';
import { expect } from 'chai';
import type { RecordedEvent } from '../../../shared/event-store/EventStore.ts';
import { anEvent, someEvents, waitUntil } from '../../../test/contracts/eventStore/contractFixtures.ts';
import { describeEventStoreContract } from '../../../test/contracts/eventStoreContract.ts';
import { openKurrentEventStore, type KurrentEventStore } from './KurrentEventStore.ts';
import { containerRuntimeProblem } from '../../../test/support/containerRuntime.ts';

/** A single insecure in-memory node; KURRENTDB_IMAGE runs the suite against another release. */
const KURRENTDB_IMAGE = process.env.KURRENTDB_IMAGE ?? 'docker.kurrent.io/kurrent-latest/kurrentdb:25.1';
const PORT = 2113;

/**
 * The EventStore contract against a real KurrentDB started by testcontainers, one server for the
 * suite and a stream prefix of its own for each test (a fresh, empty store as the contract wants).
 * Without a reachable container runtime (no Docker engine), the suite is skipped with the reason
 * printed.
 */
describe('KurrentEventStore against KurrentDB (testcontainers)', function () {
  this.timeout(300_000);
  let connectionString = '';
  let stopServer: (() => Promise<unknown>) | null = null;
  const opened: KurrentEventStore[] = [];
  const open = async (streamPrefix?: string): Promise<KurrentEventStore> => {
    const store = await openKurrentEventStore({ connectionString, streamPrefix });
    opened.push(store);
    return store;
  };

  before(async function () {
    const problem = await containerRuntimeProblem();
    if (problem !== null) {
      console.log(`      skipped: ${problem}, so no KurrentDB node`);
      this.skip();
    }
    const { GenericContainer, Wait } = await import('testcontainers');
    const node = await new GenericContainer(KURRENTDB_IMAGE)
      .withEnvironment({
        KURRENTDB_CLUSTER_SIZE: '1',
        KURRENTDB_INSECURE: 'true',
        KURRENTDB_MEM_DB: 'true',
        KURRENTDB_RUN_PROJECTIONS: 'None',
      })
      .withExposedPorts(PORT)
      .withWaitStrategy(Wait.forHttp('/health/live', PORT).forStatusCode(204).withStartupTimeout(180_000))
      .start();
    connectionString = `kurrentdb://${node.getHost()}:${node.getMappedPort(PORT)}?tls=false`;
    stopServer = () => node.stop();
  });

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
  });

  after(async () => {
    await stopServer?.();
  });

  describeEventStoreContract('KurrentEventStore', () => open(`contract-${randomUUID()}-`), { appendAtomically: false });

  describe('what only KurrentDB has', () => {
    it('given appended events, when read from their stream and from $all, then both carry the positions the appends returned', async () => {
      const store = await open(`positions-${randomUUID()}-`);
      const first = await store.append('s', someEvents(2), 'no_stream');
      const second = await store.append('t', [anEvent(2)], 'no_stream');
      const fromStreams = [...(await store.readStream('s')), ...(await store.readStream('t'))];
      expect(fromStreams.map((event) => event.position)).to.deep.equal((await store.readAll()).map((event) => event.position));
      expect([fromStreams[1]?.position, fromStreams[2]?.position]).to.deep.equal([first.position, second.position]);
    });

    it('given system streams, events of a $ type and another prefix\'s streams, when the unprefixed store reads and subscribes, then it sees only its own events', async () => {
      // Given: writes of others through the client itself, between two of ours
      const store = await open();
      const before = await store.headPosition();
      const mine = `own-${randomUUID()}`;
      await store.append(mine, [anEvent(0)], 'no_stream');
      const raw = KurrentDBClient.connectionString(connectionString);
      try {
        await raw.appendToStream(`$system-${randomUUID()}`, jsonEvent({ type: 'SystemThing', data: { n: 1 } }));
        await raw.appendToStream(`user-${randomUUID()}`, jsonEvent({ type: '$systemType', data: { n: 2 } }));
      } finally {
        await raw.dispose();
      }
      const last = await store.append(mine, [anEvent(3)], 0);

      // When
      const read = await store.readAll({ after: before });
      const received: RecordedEvent[] = [];
      const subscription = store.subscribeToAll({ after: before, onEvent: (event) => void received.push(event) });
      await waitUntil(() => received.length >= 2, 'both own events are received', 30_000);
      await subscription.close();

      // Then
      expect(read.map((event) => [event.streamId, event.data.n])).to.deep.equal([[mine, 0], [mine, 3]]);
      expect(received.map((event) => event.position)).to.deep.equal(read.map((event) => event.position));
      expect(await store.headPosition()).to.equal(last.position);
    });

    it('given a prefixed store, when another prefix appends, then its reads, head and subscriptions do not see it', async () => {
      const store = await open(`mine-${randomUUID()}-`);
      const other = await open(`other-${randomUUID()}-`);
      const own = await store.append('s', [anEvent(0)], 'no_stream');
      await other.append('s', [anEvent(1)], 'no_stream');
      expect((await store.readAll()).map((event) => event.data.n)).to.deep.equal([0]);
      expect(await store.headPosition()).to.equal(own.position);
      expect(await store.readStream('s')).to.have.length(1);
    });
  });
});
