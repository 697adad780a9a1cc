import { expect } from 'chai';
import type { BusMessage, KeyOwnership } from '../../shared/bus/MessageBus.ts';
import type { LogEntry } from '../../shared/ports/Logger.ts';
import { InProcessBus, type InProcessBusOptions } from './InProcessBus.ts';
import { describeMessageBusContract } from '../../test/contracts/messageBusContract.ts';
import { prefixedBus } from './prefixedBus.ts';
import { sleep, waitUntil } from '../../test/support/waitUntil.ts';

describeMessageBusContract('InProcessBus', ({ maxAttempts }) => new InProcessBus({ backoffBaseMs: 5, backoffMaxMs: 20, maxAttempts }));
// KAFKA_TOPIC_PREFIX's decorator must keep every guarantee of the bus it wraps.
describeMessageBusContract('InProcessBus behind a topic prefix', ({ maxAttempts }) =>
  prefixedBus(new InProcessBus({ backoffBaseMs: 5, backoffMaxMs: 20, maxAttempts }), 'staging.'),
);

describe('prefixedBus: topics and groups under KAFKA_TOPIC_PREFIX', () => {
  it('given a prefixed bus, when it publishes, then the wrapped bus sees the prefixed topic and the handler the plain one', async () => {
    const inner = new InProcessBus();
    const outer = prefixedBus(inner, 'staging.');
    const seenInside: string[] = [];
    const seenOutside: string[] = [];
    await inner.subscribe({ topic: 'staging.jobs', group: 'spy', handler: async (message) => void seenInside.push(message.topic) });
    await outer.subscribe({ topic: 'jobs', group: 'g', handler: async (message) => void seenOutside.push(message.topic) });
    await inner.subscribe({ topic: 'jobs', group: 'other-deployment', handler: async () => expect.fail('an unprefixed topic got the message') });
    await outer.publish('jobs', 'k', { n: 1 });
    await waitUntil(() => seenInside.length === 1 && seenOutside.length === 1, 'both saw the message');
    expect(seenInside).to.deep.equal(['staging.jobs']);
    expect(seenOutside).to.deep.equal(['jobs']);
    await inner.close();
  });
});

type Seq = { seq: number };

/** A handler whose calls stay pending until the test releases them. */
const gate = () => {
  const waiting: Array<() => void> = [];
  const started: string[] = [];
  return {
    started,
    handler: async ({ key }: BusMessage<Seq>) => {
      started.push(key);
      await new Promise<void>((resolve) => waiting.push(resolve));
    },
    releaseAll: () => waiting.splice(0).forEach((resolve) => resolve()),
  };
};

describe('InProcessBus', () => {
  let bus: InProcessBus;
  const open = (options: InProcessBusOptions) => (bus = new InProcessBus({ backoffBaseMs: 5, backoffMaxMs: 20, ...options }));
  const publish = (keys: ReadonlyArray<string>, topic = 't') =>
    Promise.all(keys.map((key, seq) => bus.publish<Seq>(topic, key, { seq })));

  afterEach(async () => {
    await bus.close();
  });

  it('given concurrency 2, when six keys wait, then only two handlers run until one finishes', async () => {
    open({ concurrency: 2 });
    const blocked = gate();
    await bus.subscribe<Seq>({ topic: 't', group: 'g', handler: blocked.handler });
    await publish(['a', 'b', 'c', 'd', 'e', 'f']);
    await waitUntil(() => blocked.started.length === 2, 'two handlers start');
    await sleep(30);
    expect(blocked.started).to.have.length(2);
    blocked.releaseAll();
    await waitUntil(() => blocked.started.length === 4, 'two more start once the first two finish');
    blocked.releaseAll();
    await waitUntil(() => blocked.started.length === 6, 'all six start');
    blocked.releaseAll();
  });

  it('given messages waiting, running and between retries, when asked whether the group holds their keys, then yes until each is handled', async () => {
    open({ concurrency: 1, backoffBaseMs: 10_000 });
    const blocked = gate();
    let failOnce = true;
    await bus.subscribe<Seq>({ topic: 't', group: 'g', handler: blocked.handler });
    await bus.subscribe<Seq>({
      topic: 'r',
      group: 'g',
      handler: async () => {
        if (!failOnce) return;
        failOnce = false;
        throw new Error('first attempt fails');
      },
    });
    await publish(['a', 'b']);
    await publish(['x'], 'r');
    await waitUntil(() => blocked.started.length === 1, 'the first runs');
    // a runs, b waits for the one slot, x waits out its backoff: all held; unknown keys and groups are not.
    expect(['a', 'b'].map((key) => bus.holds('t', 'g', key))).to.deep.equal([true, true]);
    expect(bus.holds('r', 'g', 'x')).to.equal(true);
    expect([bus.holds('t', 'g', 'c'), bus.holds('t', 'other', 'a'), bus.holds('none', 'g', 'a')]).to.deep.equal([false, false, false]);
    blocked.releaseAll();
    await waitUntil(() => blocked.started.length === 2, 'the second runs');
    expect(bus.holds('t', 'g', 'a')).to.equal(false);
    blocked.releaseAll();
    await waitUntil(() => !bus.holds('t', 'g', 'b'), 'the second was handled');
  });

  it('given a key waiting out a backoff, when another key is published, then it is handled meanwhile', async () => {
    open({ backoffBaseMs: 200, backoffMaxMs: 1000 });
    const handled: string[] = [];
    await bus.subscribe<Seq>({
      topic: 't',
      group: 'g',
      handler: async ({ key, attempt }) => {
        handled.push(`${key}#${attempt}`);
        if (key === 'slow' && attempt === 1) throw new Error('transient');
      },
    });
    await publish(['slow']);
    await waitUntil(() => handled.length === 1, 'the first attempt');
    const failedAt = Date.now();
    await publish(['fast']);
    await waitUntil(() => handled.length === 3, 'the retry');
    expect(handled).to.deep.equal(['slow#1', 'fast#1', 'slow#2']);
    expect(Date.now() - failedAt).to.be.at.least(190);
  });

  it('given a retry waiting out a long backoff, when the bus closes, then no timer of the bus holds the process', async () => {
    open({ backoffBaseMs: 60_000, backoffMaxMs: 60_000 });
    const timers = () => process.getActiveResourcesInfo().filter((name) => name === 'Timeout').length;
    let failed = false;
    await bus.subscribe<Seq>({
      topic: 't',
      group: 'g',
      handler: async () => {
        failed = true;
        throw new Error('transient');
      },
    });
    const before = timers();
    await publish(['a']);
    await waitUntil(() => failed && timers() === before + 1, 'the first attempt fails and a retry is scheduled');
    await bus.close();
    expect(timers()).to.equal(before);
  });

  it('given a handler that throws synchronously, when it fails, then the message is redelivered', async () => {
    open({});
    const attempts: number[] = [];
    await bus.subscribe<Seq>({
      topic: 't',
      group: 'g',
      handler: ({ attempt }) => {
        attempts.push(attempt);
        if (attempt === 1) throw new Error('sync');
        return Promise.resolve();
      },
    });
    await publish(['a']);
    await waitUntil(() => attempts.length === 2, 'the redelivery');
    expect(attempts).to.deep.equal([1, 2]);
  });

  it('given a retention of 3, when a group subscribes after 5 messages, then it gets the last 3', async () => {
    open({ retentionPerTopic: 3 });
    await publish(['a', 'b', 'c', 'd', 'e']);
    const seen: number[] = [];
    await bus.subscribe<Seq>({ topic: 't', group: 'late', handler: async ({ value }) => void seen.push(value.seq) });
    await waitUntil(() => seen.length === 3, 'three deliveries');
    await sleep(30);
    expect([...seen].sort()).to.deep.equal([2, 3, 4]);
  });

  it('given no retention, when messages are published, then subscribed groups get them and later groups do not', async () => {
    open({ retentionPerTopic: 0 });
    const early: number[] = [];
    const late: number[] = [];
    await bus.subscribe<Seq>({ topic: 't', group: 'early', handler: async ({ value }) => void early.push(value.seq) });
    await publish(['a', 'b']);
    await bus.subscribe<Seq>({ topic: 't', group: 'late', handler: async ({ value }) => void late.push(value.seq) });
    await waitUntil(() => early.length === 2, 'the early group handles both');
    await sleep(30);
    expect(late).to.deep.equal([]);
  });

  it('given a group whose members all left, when one rejoins, then it resumes where the group stopped', async () => {
    open({});
    const seen: number[] = [];
    const handler = async ({ value }: BusMessage<Seq>) => void seen.push(value.seq);
    const first = await bus.subscribe<Seq>({ topic: 't', group: 'g', handler });
    await bus.publish<Seq>('t', 'a', { seq: 0 });
    await waitUntil(() => seen.length === 1, 'the first message');
    await first.close();
    await bus.publish<Seq>('t', 'a', { seq: 1 });
    await bus.publish<Seq>('t', 'b', { seq: 2 });
    await sleep(20);
    expect(seen).to.deep.equal([0]);
    await bus.subscribe<Seq>({ topic: 't', group: 'g', handler });
    await waitUntil(() => seen.length === 3, 'the two messages published while away');
    await sleep(30);
    expect([...seen].sort()).to.deep.equal([0, 1, 2]);
  });

  it('given a group that lost messages to retention while away, when it rejoins, then a warning says how many', async () => {
    const entries: LogEntry[] = [];
    open({ retentionPerTopic: 1, logger: { log: (entry) => void entries.push(entry), flush: async () => {} } });
    const seen: number[] = [];
    const consumer = await bus.subscribe<Seq>({ topic: 't', group: 'g', handler: async ({ value }) => void seen.push(value.seq) });
    await consumer.close();
    await publish(['a', 'b', 'c']);
    await bus.subscribe<Seq>({ topic: 't', group: 'g', handler: async ({ value }) => void seen.push(value.seq) });
    await waitUntil(() => seen.length === 1, 'the retained message');
    expect(seen).to.deep.equal([2]);
    expect(entries.map(({ level, message }) => ({ level, message }))).to.deep.equal([
      { level: 'warning', message: 'Group g missed 2 message(s) of t dropped by retention' },
    ]);
  });

  it('given a consumer busy on a key with more work queued, when it closes, then its keys move to the other consumer', async () => {
    open({ concurrency: 1 });
    const blocked = gate();
    const other: string[] = [];
    const busy = await bus.subscribe<Seq>({ topic: 't', group: 'g', handler: blocked.handler });
    await publish(['x', 'x', 'y', 'z']);
    await waitUntil(() => blocked.started.length === 1, 'the busy consumer starts x');
    // With two members, y hashes to the busy one and z to the other: y has to move on close.
    await bus.subscribe<Seq>({ topic: 't', group: 'g', handler: async ({ key }) => void other.push(key) });
    let closed = false;
    const closing = busy.close().then(() => (closed = true));
    await waitUntil(() => other.includes('y') && other.includes('z'), 'y and z move to the other consumer');
    expect(other).to.not.include('x');
    expect(closed, 'close resolved before its handler finished').to.equal(false);
    blocked.releaseAll();
    await closing;
    await waitUntil(() => other.includes('x'), 'the second x goes to the other consumer once the first finished');
    expect(blocked.started).to.deep.equal(['x']);
  });

  it('given two groups, when one handler mutates its value, then the other group receives the value as published', async () => {
    open({});
    const seen: unknown[] = [];
    await bus.subscribe<{ list: number[] }>({ topic: 't', group: 'mutator', handler: async ({ value }) => void value.list.push(99) });
    await bus.subscribe<{ list: number[] }>({ topic: 't', group: 'reader', handler: async ({ value }) => void seen.push(value) });
    await bus.publish('t', 'a', { list: [1] });
    await waitUntil(() => seen.length === 1, 'the reader gets the message');
    expect(seen).to.deep.equal([{ list: [1] }]);
  });

  it('given a value that is not JSON, when published, then publish rejects with a TypeError', async () => {
    open({});
    for (const value of [undefined, () => 1, { n: 1n }]) {
      const error = await bus.publish('t', 'a', value).then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(error, String(value)).to.be.instanceOf(TypeError);
    }
  });

  it('given a dead-letter limit of 2, when three messages die, then the two latest are kept', async () => {
    open({ maxAttempts: 1, deadLetterLimit: 2 });
    await bus.subscribe<Seq>({ topic: 't', group: 'g', handler: async () => Promise.reject(new Error('poison')) });
    await publish(['k', 'k', 'k']);
    const deadSeqs = () => bus.deadLetters('t', 'g').map(({ message }) => (message.value as Seq).seq);
    await waitUntil(() => deadSeqs().includes(2), 'the third message is dead');
    expect(deadSeqs()).to.deep.equal([1, 2]);
  });

  it('given invalid options, when constructing, then a RangeError names the option', () => {
    bus = new InProcessBus();
    expect(() => new InProcessBus({ concurrency: 0 })).to.throw(RangeError, /concurrency/);
    expect(() => new InProcessBus({ retentionPerTopic: 1.5 })).to.throw(RangeError, /retentionPerTopic/);
    expect(() => new InProcessBus({ backoffBaseMs: Number.POSITIVE_INFINITY })).to.throw(RangeError, /backoffBaseMs/);
  });
});

describe('InProcessBus key ownership', () => {
  let bus: InProcessBus;
  const KEYS = Array.from({ length: 200 }, (_, i) => `65a0000000000000000${String(i).padStart(5, '0')}`);
  /** Every key has exactly one owner among the open members. */
  const ownersOf = (members: ReadonlyArray<KeyOwnership>) => KEYS.map((key) => members.filter((member) => member.owns(key)).length);
  const join = async (changes: string[], name: string, group = 'schedulers') =>
    bus.own({ topic: 'ownership', group, onChange: () => void changes.push(name) });

  beforeEach(() => {
    bus = new InProcessBus();
  });
  afterEach(async () => {
    await bus.close();
  });

  it('given members joining and leaving one by one, when each change is done, then every key has exactly one owner and the others were told', async () => {
    const changes: string[] = [];
    const a = await join(changes, 'a');
    const b = await join(changes, 'b');
    const c = await join(changes, 'c');
    expect(ownersOf([a, b, c]).every((owners) => owners === 1), 'one owner per key of three').to.equal(true);
    for (const member of [a, b, c]) expect(KEYS.filter((key) => member.owns(key)).length, 'each of three owns some').to.be.greaterThan(20);
    await sleep(0);
    expect(changes).to.deep.equal(['a', 'a', 'b']);

    changes.length = 0;
    await b.close();
    await sleep(0);
    expect(changes.sort()).to.deep.equal(['a', 'c']);
    expect(ownersOf([a, c]).every((owners) => owners === 1), 'one owner per key of two').to.equal(true);
    expect(KEYS.some((key) => b.owns(key)), 'the closed member owns a key').to.equal(false);

    changes.length = 0;
    await a.close();
    await sleep(0);
    expect(changes).to.deep.equal(['c']);
    expect(KEYS.every((key) => c.owns(key)), 'the last member owns every key').to.equal(true);
  });

  it('given a subscriber and an ownership member in one group, when keys are published, then the subscriber gets exactly the keys the member does not own', async () => {
    const seen = new Set<string>();
    await bus.subscribe<{ n: number }>({ topic: 'ownership', group: 'schedulers', handler: async ({ key }) => void seen.add(key) });
    const member = await join([], 'member');
    await Promise.all(KEYS.map((key, n) => bus.publish('ownership', key, { n })));
    const expected = KEYS.filter((key) => !member.owns(key));
    await waitUntil(() => seen.size === expected.length, 'the subscriber handles its keys');
    await sleep(30);
    expect([...seen].sort()).to.deep.equal(expected.sort());
  });

  it('given a listener that closes its member and one that throws, when a member joins, then the bus stays consistent and the error is logged', async () => {
    const entries: LogEntry[] = [];
    await bus.close();
    bus = new InProcessBus({ logger: { log: (entry) => void entries.push(entry), flush: async () => {} } });
    const closing: { member: KeyOwnership | null } = { member: null };
    closing.member = await bus.own({ topic: 'ownership', group: 'g', onChange: () => void closing.member?.close() });
    await bus.own({ topic: 'ownership', group: 'g', onChange: () => {} });
    await bus.own({ topic: 'ownership', group: 'g', onChange: () => { throw new Error('listener broke'); } });
    const last = await join([], 'last', 'g');
    await sleep(10);
    expect(KEYS.some((key) => closing.member?.owns(key)), 'the member closed by its listener owns a key').to.equal(false);
    expect(KEYS.filter((key) => last.owns(key)).length, 'the last member owns its share').to.be.greaterThan(0);
    expect(entries.map(({ message }) => message)).to.include('Ownership listener of group g on ownership failed: Error: listener broke');
  });
});
