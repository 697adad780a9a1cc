import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { BusMessage } from '../../../shared/bus/MessageBus.ts';
import { requireKafkaBroker } from '../../../test/support/kafkaBroker.ts';
import { describeMessageBusContract } from '../../../test/contracts/messageBusContract.ts';
import { sleep, waitUntil } from '../../../test/support/waitUntil.ts';
import { KafkaBus } from './KafkaBus.ts';

/**
 * The bus contract against a real broker: TEST_KAFKA_BROKERS (.ci/run starts one with .ci/kafka),
 * else a testcontainers broker, else skipped with the reason printed (failed in CI). Topics and
 * groups are unique per test, so reruns and other runs on the same broker do not collide.
 */
describe('KafkaBus against a Kafka broker', function () {
  this.timeout(300_000);
  let brokers: string[] = [];

  before(async function () {
    ({ brokers } = await requireKafkaBroker(this));
  });

  const openBus = (maxAttempts = 3) =>
    new KafkaBus({
      brokers,
      clientId: `e2e-${randomUUID()}`,
      backoffBaseMs: 5,
      backoffMaxMs: 20,
      maxAttempts,
      // The broker's minimum session; frequent heartbeats so members learn of rebalances quickly.
      sessionTimeoutMs: 6_000,
      heartbeatIntervalMs: 300,
    });

  // Group joins and rebalances on a loaded 2-core machine: generous.
  describeMessageBusContract('KafkaBus', ({ maxAttempts }) => openBus(maxAttempts), { patienceMs: 30_000 });

  describe('what a broker adds: committed offsets across processes', () => {
    const PATIENCE = 30_000;
    type Seq = { seq: number };
    let topic: string;
    let group: string;
    const buses: KafkaBus[] = [];
    /** A bus per simulated process, closed after the test. */
    const startProcess = () => {
      const bus = openBus();
      buses.push(bus);
      return bus;
    };

    beforeEach(() => {
      topic = `e2e-${randomUUID()}`;
      group = `workers-${randomUUID()}`;
    });

    afterEach(async () => {
      await Promise.all(buses.splice(0).map((bus) => bus.close()));
    });

    it('given messages handled by a process that then stopped, when another process of the group starts, then it gets only the messages published since', async () => {
      const first = startProcess();
      const handledFirst: string[] = [];
      await first.subscribe<Seq>({ topic, group, handler: async ({ id }) => void handledFirst.push(id) });
      const early = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((key, seq) => first.publish<Seq>(topic, key, { seq })));
      await waitUntil(() => handledFirst.length >= early.length, 'the first process handles the early messages', PATIENCE);
      await first.close();

      const second = startProcess();
      const late = await Promise.all(['a', 'f', 'g'].map((key, seq) => second.publish<Seq>(topic, key, { seq: 10 + seq })));
      const handledSecond: string[] = [];
      await second.subscribe<Seq>({ topic, group, handler: async ({ id }) => void handledSecond.push(id) });
      await waitUntil(() => handledSecond.length >= late.length, 'the second process handles the late messages', PATIENCE);
      // A redelivery of an early message would show up by now.
      await sleep(1_000);
      expect([...handledFirst].sort()).to.deep.equal([...early].sort());
      expect([...handledSecond].sort()).to.deep.equal([...late].sort());
    });

    it('given a stream of messages, when a second process joins the group mid-stream, then every message is handled and each process sees each key in publish order', async () => {
      const handled: Array<{ member: string; message: BusMessage<Seq> }> = [];
      const handler = (member: string) => async (message: BusMessage<Seq>) => {
        handled.push({ member, message });
        await sleep(2);
      };
      const first = startProcess();
      await first.subscribe<Seq>({ topic, group, handler: handler('first') });
      const keys = Array.from({ length: 200 }, (_, index) => `k${index % 20}`);
      const ids: string[] = [];
      const publishing = (async () => {
        for (const [seq, key] of keys.entries()) {
          ids.push(await first.publish<Seq>(topic, key, { seq }));
          if (seq % 20 === 0) await sleep(10);
        }
      })();
      await waitUntil(() => handled.length >= 40, 'the first process is under way', PATIENCE);
      const second = startProcess();
      await second.subscribe<Seq>({ topic, group, handler: handler('second') });
      await publishing;
      await waitUntil(() => ids.every((id) => handled.some(({ message }) => message.id === id)), 'every message is handled', PATIENCE);
      for (const member of ['first', 'second']) {
        for (const key of new Set(keys)) {
          // At least once: a message handled before a rebalance may come again, never out of order.
          const seqs = handled.filter((entry) => entry.member === member && entry.message.key === key).map(({ message }) => message.value.seq);
          const firstSeen = seqs.filter((seq, index) => seqs.indexOf(seq) === index);
          expect(firstSeen, `${member}: ${key} in publish order`).to.deep.equal([...firstSeen].sort((a, b) => a - b));
        }
      }
      expect(new Set(handled.map(({ member }) => member)), 'both processes handled some').to.have.property('size', 2);
    });
  });
});
