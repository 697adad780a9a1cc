import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { BusMessage, KeyOwnership, MessageBus } from '../../shared/bus/MessageBus.ts';
import type { DeadLetterSource } from '../../ops/bus/DeadLetter.ts';
import { sleep, waitUntil } from '../support/waitUntil.ts';

export interface BusTestSettings {
  /** Attempts before a message is dead-lettered. */
  maxAttempts: number;
}

/**
 * Must return an open bus whose redelivery backoff is a few milliseconds (at most 20 ms), so
 * that the suite runs in seconds. It is closed after each test; topics are unique per test.
 */
export type MessageBusFactory = (
  settings: BusTestSettings,
) => (MessageBus & DeadLetterSource) | Promise<MessageBus & DeadLetterSource>;

type Seq = { seq: number };

export interface ContractOptions {
  /**
   * How long an expected delivery or rebalance may take. Default 3 s, enough for a bus in the
   * process; a broker's group joins and rebalances (heartbeats, session timeouts) need more.
   */
  patienceMs?: number;
}

/** Long enough for a wrong extra delivery or retry to show up with a backoff of at most 20 ms. */
const SETTLE_MS = 150;

/** The behaviour every MessageBus adapter shares; run it once per adapter. */
export const describeMessageBusContract = (name: string, factory: MessageBusFactory, options: ContractOptions = {}): void => {
  const patience = options.patienceMs ?? 3_000;
  describe(`MessageBus contract: ${name}`, function () {
    this.timeout(Math.max(10_000, 4 * patience));
    let bus: MessageBus & DeadLetterSource;
    let topic: string;
    let run: string;
    /**
     * A group name unique to the test: a broker outlives the test (and may serve other runs at
     * once), and a group left over from another test would join this one's rebalances.
     */
    const group = (name: string): string => `${name}-${run}`;

    beforeEach(async () => {
      run = randomUUID();
      topic = `contract-${run}`;
      bus = await factory({ maxAttempts: 3 });
    });

    afterEach(async () => {
      await bus.close();
    });

    const publishAll = async (keys: ReadonlyArray<string>): Promise<string[]> => {
      const ids: string[] = [];
      for (const [seq, key] of keys.entries()) ids.push(await bus.publish<Seq>(topic, key, { seq }));
      return ids;
    };

    const keysOf = (count: number, distinct: number) => Array.from({ length: count }, (_, i) => `k${i % distinct}`);

    it('given a published message, when delivered, then it carries the returned id, its key, value and attempt 1', async () => {
      const seen: BusMessage<Seq>[] = [];
      await bus.subscribe<Seq>({ topic, group: group('g'), handler: async (message) => void seen.push(message) });
      const before = Date.now();
      const [first, second] = await publishAll(['a', 'b']);
      await waitUntil(() => seen.length === 2, 'both messages are delivered', patience);
      expect(first).to.be.a('string').and.not.equal(second);
      const delivered = seen.find((message) => message.id === first);
      expect(delivered).to.deep.include({ id: first, topic, key: 'a', value: { seq: 0 }, attempt: 1 });
      expect(Date.parse(delivered?.publishedAt ?? '')).to.be.within(before - 1000, Date.now() + 1000);
    });

    it('given headers (a trace context), when a message is published with them, then its delivery carries them, and one without has none', async () => {
      const seen: BusMessage<Seq>[] = [];
      await bus.subscribe<Seq>({ topic, group: group('h'), handler: async (message) => void seen.push(message) });
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const withHeaders = await bus.publish<Seq>(topic, 'a', { seq: 0 }, { traceparent, tracestate: 'vendor=1' });
      const without = await bus.publish<Seq>(topic, 'a', { seq: 1 });
      await waitUntil(() => seen.length === 2, 'both messages are delivered', patience);
      expect(seen.find((message) => message.id === withHeaders)?.headers).to.deep.equal({ traceparent, tracestate: 'vendor=1' });
      expect(seen.find((message) => message.id === without)?.headers).to.equal(undefined);
    });

    it('given one group of two consumers, when many keys are published, then each message is handled once, each key by one consumer', async () => {
      const seen: Array<{ consumer: string; message: BusMessage<Seq> }> = [];
      for (const consumer of ['c1', 'c2']) {
        await bus.subscribe<Seq>({ topic, group: group('g'), handler: async (message) => void seen.push({ consumer, message }) });
      }
      const ids = await publishAll(keysOf(40, 20));
      await waitUntil(() => seen.length >= 40, '40 messages are handled', patience);
      await sleep(SETTLE_MS);
      expect(seen.map(({ message }) => message.id).sort()).to.deep.equal([...ids].sort());
      const consumerOfKey = new Map<string, string>();
      for (const { consumer, message } of seen) {
        expect(consumerOfKey.get(message.key) ?? consumer, `consumer of ${message.key}`).to.equal(consumer);
        consumerOfKey.set(message.key, consumer);
      }
      expect(new Set(consumerOfKey.values())).to.have.property('size', 2);
    });

    it('given two groups, when messages are published, then each group handles every message', async () => {
      const seen = { g1: [] as string[], g2: [] as string[] };
      for (const name of ['g1', 'g2'] as const) {
        await bus.subscribe<Seq>({ topic, group: group(name), handler: async (message) => void seen[name].push(message.id) });
      }
      const ids = await publishAll(keysOf(10, 3));
      await waitUntil(() => seen.g1.length >= 10 && seen.g2.length >= 10, 'both groups handled 10 messages', patience);
      await sleep(SETTLE_MS);
      expect([...seen.g1].sort()).to.deep.equal([...ids].sort());
      expect([...seen.g2].sort()).to.deep.equal([...ids].sort());
    });

    it('given handlers of varying duration, when several keys interleave, then each key is handled in publish order, one at a time', async () => {
      const order = new Map<string, number[]>();
      const running = new Set<string>();
      let overlapped = false;
      let active = 0;
      let mostActive = 0;
      await bus.subscribe<Seq>({
        topic,
        group: group('g'),
        handler: async ({ key, value }) => {
          if (running.has(key)) overlapped = true;
          running.add(key);
          active += 1;
          mostActive = Math.max(mostActive, active);
          order.set(key, [...(order.get(key) ?? []), value.seq]);
          // Early messages of a key take longer: were a key handled concurrently, later ones would overtake.
          await sleep(value.seq % 8 < 4 ? 6 : 0);
          active -= 1;
          running.delete(key);
        },
      });
      const keys = keysOf(60, 4);
      await publishAll(keys);
      await waitUntil(() => [...order.values()].flat().length >= 60, '60 messages are handled', patience);
      for (const key of new Set(keys)) {
        const expected = keys.flatMap((k, seq) => (k === key ? [seq] : []));
        expect(order.get(key), `order of ${key}`).to.deep.equal(expected);
      }
      expect(overlapped, 'one key handled twice at once').to.equal(false);
      expect(mostActive, 'distinct keys handled concurrently').to.be.greaterThan(1);
    });

    it('given a handler of one key still running, when messages of other keys are published, then they are handled meanwhile', async () => {
      // A worker's handler runs a whole task: one long task must not stop the others.
      let release = (): void => undefined;
      const blocked = new Promise<void>((resolve) => (release = resolve));
      let blockerStarted = false;
      const handled: string[] = [];
      await bus.subscribe<Seq>({
        topic,
        group: group('g'),
        handler: async ({ key }) => {
          if (key === 'blocker') {
            blockerStarted = true;
            await blocked;
          }
          handled.push(key);
        },
      });
      try {
        await publishAll(['blocker']);
        await waitUntil(() => blockerStarted, 'the blocking handler starts', patience);
        const others = keysOf(20, 20).map((key) => `other-${key}`);
        for (const key of others) await bus.publish<Seq>(topic, key, { seq: 1 });
        // On a broker a few keys share the blocker's partition and rightly wait behind it: half must not.
        await waitUntil(() => handled.length >= others.length / 2, 'half of the other keys are handled while the first handler runs', patience);
        expect(handled, 'the blocking handler finished').to.not.include('blocker');
      } finally {
        release();
      }
      await waitUntil(() => handled.includes('blocker'), 'the blocking handler finishes once released', patience);
    });

    it('given a handler that throws once, when the message is redelivered, then the attempt is incremented and it succeeds', async () => {
      const attempts: Array<{ id: string; attempt: number }> = [];
      await bus.subscribe<Seq>({
        topic,
        group: group('g'),
        handler: async ({ id, attempt }) => {
          attempts.push({ id, attempt });
          if (attempt === 1) throw new Error('transient');
        },
      });
      const [id = ''] = await publishAll(['a']);
      await waitUntil(() => attempts.length >= 2, 'the message is redelivered', patience);
      await sleep(SETTLE_MS);
      expect(attempts).to.deep.equal([
        { id, attempt: 1 },
        { id, attempt: 2 },
      ]);
    });

    it('given a message of a key being retried, when later messages of that key arrive, then they wait for it', async () => {
      const handled: string[] = [];
      await bus.subscribe<Seq>({
        topic,
        group: group('g'),
        handler: async ({ value, attempt }) => {
          handled.push(`${value.seq}#${attempt}`);
          if (value.seq === 0 && attempt < 3) throw new Error('transient');
        },
      });
      await publishAll(['k', 'k', 'k']);
      await waitUntil(() => handled.length >= 5, 'five deliveries', patience);
      await sleep(SETTLE_MS);
      expect(handled).to.deep.equal(['0#1', '0#2', '0#3', '1#1', '2#1']);
    });

    it('given a handler that always throws, when maxAttempts is reached, then the message is dead-lettered and the key moves on', async () => {
      const handled: string[] = [];
      await bus.subscribe<Seq>({
        topic,
        group: group('g'),
        handler: async ({ value, attempt }) => {
          handled.push(`${value.seq}#${attempt}`);
          if (value.seq === 0) throw new Error(`poison ${attempt}`);
        },
      });
      const [poison] = await publishAll(['k', 'k']);
      await waitUntil(() => handled.includes('1#1'), 'the next message of the key is handled', patience);
      await sleep(SETTLE_MS);
      expect(handled).to.deep.equal(['0#1', '0#2', '0#3', '1#1']);
      const dead = await bus.deadLetters(topic, group('g'));
      expect(dead).to.have.length(1);
      expect(dead[0]?.message).to.deep.include({ id: poison, key: 'k', value: { seq: 0 }, attempt: 3 });
      expect(dead[0]?.error).to.equal('poison 3');
      expect(await bus.deadLetters(topic, group('other'))).to.deep.equal([]);
    });

    it('given messages published before a group exists, when it subscribes, then it receives them in order', async () => {
      await publishAll(['a', 'b', 'a']);
      const seen: number[] = [];
      await bus.subscribe<Seq>({ topic, group: group('late'), handler: async ({ value }) => void seen.push(value.seq) });
      await waitUntil(() => seen.length >= 3, 'the retained messages are delivered', patience);
      expect([...seen].sort()).to.deep.equal([0, 1, 2]);
      expect(seen.filter((seq) => seq !== 1)).to.deep.equal([0, 2]);
    });

    it('given two consumers of a group, when one closes, then the other handles every later message', async () => {
      const seen: Array<{ consumer: string; seq: number }> = [];
      const [first] = await Promise.all(
        ['c1', 'c2'].map((consumer) =>
          bus.subscribe<Seq>({ topic, group: group('g'), handler: async ({ value }) => void seen.push({ consumer, seq: value.seq }) }),
        ),
      );
      await first?.close();
      await publishAll(keysOf(20, 20));
      await waitUntil(() => seen.length >= 20, '20 messages are handled', patience);
      expect(seen.filter(({ consumer }) => consumer === 'c1')).to.deep.equal([]);
    });

    it('given a handler running, when the bus closes, then close resolves only after the handler finished', async () => {
      let started = false;
      let finished = false;
      await bus.subscribe<Seq>({
        topic,
        group: group('g'),
        handler: async () => {
          started = true;
          await sleep(100);
          finished = true;
        },
      });
      await publishAll(['a']);
      await waitUntil(() => started, 'the handler starts', patience);
      await bus.close();
      expect(finished).to.equal(true);
    });

    it('given a message waiting for redelivery, when the bus closes, then nothing more is delivered nor published', async () => {
      const attempts: number[] = [];
      await bus.subscribe<Seq>({
        topic,
        group: group('g'),
        handler: async ({ attempt }) => {
          attempts.push(attempt);
          throw new Error('fails');
        },
      });
      await publishAll(['a']);
      await waitUntil(() => attempts.length >= 1, 'the first attempt', patience);
      await bus.close();
      await sleep(SETTLE_MS);
      expect(attempts).to.deep.equal([1]);
      const published = await bus.publish(topic, 'a', { seq: 1 }).then(
        () => 'published',
        () => 'rejected',
      );
      expect(published).to.equal('rejected');
    });

    describe('key ownership', () => {
      const KEYS = Array.from({ length: 40 }, (_, i) => `project-${i}`);
      const owned = (ownership: KeyOwnership) => KEYS.filter((key) => ownership.owns(key));
      /** A member of group `g` and how many times it was told of a rebalance. */
      const member = async (name = 'g') => {
        let changes = 0;
        const ownership = await bus.own({ topic, group: group(name), onChange: () => void (changes += 1) });
        return { ownership, changes: () => changes };
      };

      it('given the only member of a group, when it has joined, then it owns every key', async () => {
        const only = await member();
        expect(owned(only.ownership)).to.deep.equal(KEYS);
      });

      it('given two members of a group, when both joined, then they own disjoint sets of keys that together cover every key', async () => {
        const first = await member();
        const second = await member();
        const split = () => {
          const one = owned(first.ownership);
          const two = owned(second.ownership);
          return one.length > 0 && two.length > 0 && one.every((key) => !two.includes(key)) && one.length + two.length === KEYS.length;
        };
        await waitUntil(() => split() && first.changes() > 0, 'the first member is told and the keys are split', patience);
        // A split that holds, not one seen in passing.
        await sleep(SETTLE_MS);
        expect(split(), 'keys still split').to.equal(true);
      });

      it('given two members of a group, when one closes, then the other owns every key and was told so', async () => {
        const first = await member();
        const second = await member();
        await waitUntil(() => owned(first.ownership).length < KEYS.length && owned(second.ownership).length > 0, 'the keys are split', patience);
        const told = first.changes();
        await second.ownership.close();
        await waitUntil(() => owned(first.ownership).length === KEYS.length && first.changes() > told, 'the remaining member owns every key', patience);
        expect(owned(second.ownership), 'keys of the closed member').to.deep.equal([]);
      });

      it('given members of two groups on one topic, when both joined, then each owns every key of its own group', async () => {
        const one = await member('schedulers');
        const other = await member('auditors');
        await sleep(SETTLE_MS);
        expect(owned(one.ownership)).to.deep.equal(KEYS);
        expect(owned(other.ownership)).to.deep.equal(KEYS);
      });

      it('given a member, when the bus closes, then it owns nothing', async () => {
        const only = await member();
        await bus.close();
        expect(owned(only.ownership)).to.deep.equal([]);
      });
    });
  });
};
