import { expect } from 'chai';
import type { DomainEvent } from '../../shared/events.ts';
import { metadataFor } from '../../shared/events.ts';
import type { ReadStreamOptions, RecordedEvent } from '../../shared/event-store/EventStore.ts';
import { MemoryEventStore } from '../../test/support/MemoryEventStore.ts';
import type { Decider } from './Decider.ts';
import { handleCommand, lruStateCache } from './handleCommand.ts';

/** A counter that only counts up to a limit: `add` past it is refused (thrown), `noop` decides nothing. */
type CounterEvent = DomainEvent<'Added', { by: number }>;
type CounterCommand = { kind: 'add'; by: number; limit: number } | { kind: 'noop' };
const counter: Decider<number, CounterCommand, CounterEvent> = {
  initialState: () => 0,
  evolve: (state, event) => state + event.data.by,
  decide: (command, state) => {
    if (command.kind === 'noop') return [];
    if (state + command.by > command.limit) throw new Error(`over the limit at ${state}`);
    return [{ type: 'Added', data: { by: command.by } }];
  },
};

/** The memory store, counting the stream reads handleCommand makes. */
class CountingStore extends MemoryEventStore {
  reads = 0;
  override async readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    this.reads += 1;
    return super.readStream(streamId, options);
  }
}

const metadata = metadataFor(null, new Date('2026-01-01T00:00:00.000Z'), 'c-1');
/** A base of 10 s: a sleep of the retry policy (up to 10 s and more) would show, at worst as the test's timeout. */
const noSleepPolicy = { attempts: 5, baseDelayMs: 10_000 };

describe('handleCommand with a state cache', () => {
  it('given a cached stream, when a command is handled, then it is decided on the cached state without reading the stream', async () => {
    const store = new CountingStore();
    const cache = lruStateCache<number>();
    await handleCommand({ eventStore: store, streamId: 'counter-1', decider: counter, command: { kind: 'add', by: 1, limit: 10 }, metadata, retry: noSleepPolicy, cache });
    const readsBefore = store.reads;

    const result = await handleCommand({ eventStore: store, streamId: 'counter-1', decider: counter, command: { kind: 'add', by: 2, limit: 10 }, metadata, retry: noSleepPolicy, cache });

    expect(store.reads).to.equal(readsBefore);
    expect(result.state).to.equal(3);
    expect((await store.readStream('counter-1')).map((event) => event.data)).to.deep.equal([{ by: 1 }, { by: 2 }]);
  });

  it('given a cache made stale by another writer, when a command appends, then it is decided again at once on the fresh stream', async () => {
    const store = new CountingStore();
    const cache = lruStateCache<number>();
    await handleCommand({ eventStore: store, streamId: 'counter-1', decider: counter, command: { kind: 'add', by: 1, limit: 10 }, metadata, retry: noSleepPolicy, cache });
    await store.append('counter-1', [{ type: 'Added', data: { by: 5 }, metadata }], 0);

    // One attempt only: a conflict counted as contention would end in write_conflict before any backoff,
    // so success proves the stale cache cost an immediate fresh attempt outside the policy (no sleep).
    const result = await handleCommand({ eventStore: store, streamId: 'counter-1', decider: counter, command: { kind: 'add', by: 2, limit: 10 }, metadata, retry: { attempts: 1, baseDelayMs: 10_000 }, cache });

    expect(result.state).to.equal(8);
    expect((await store.readStream('counter-1')).map((event) => event.data)).to.deep.equal([{ by: 1 }, { by: 5 }, { by: 2 }]);
    expect(cache.get('counter-1')).to.deep.equal({ revision: 2, state: 8 });
  });

  it('given a stale cache under which a command would be refused, when it is handled, then the refusal is decided on the fresh stream', async () => {
    const store = new CountingStore();
    const cache = lruStateCache<number>();
    await handleCommand({ eventStore: store, streamId: 'counter-1', decider: counter, command: { kind: 'add', by: 9, limit: 10 }, metadata, retry: noSleepPolicy, cache });
    // Another writer takes the count back below the limit; the cache still says 9.
    await store.append('counter-1', [{ type: 'Added', data: { by: -9 }, metadata }], 0);

    const result = await handleCommand({ eventStore: store, streamId: 'counter-1', decider: counter, command: { kind: 'add', by: 5, limit: 10 }, metadata, retry: noSleepPolicy, cache });

    expect(result.state).to.equal(5);
  });

  it('given a stale cache under which a command decides nothing, when it is handled, then the stream is read before answering', async () => {
    const store = new CountingStore();
    const cache = lruStateCache<number>();
    await handleCommand({ eventStore: store, streamId: 'counter-1', decider: counter, command: { kind: 'add', by: 1, limit: 10 }, metadata, retry: noSleepPolicy, cache });
    await store.append('counter-1', [{ type: 'Added', data: { by: 4 }, metadata }], 0);
    const readsBefore = store.reads;

    const result = await handleCommand({ eventStore: store, streamId: 'counter-1', decider: counter, command: { kind: 'noop' }, metadata, retry: noSleepPolicy, cache });

    expect(store.reads).to.equal(readsBefore + 1);
    expect(result.state).to.equal(5);
    expect(result.position).to.equal(null);
  });

  it('given a refusal on the current state, when a cached command is handled, then it is still refused after the fresh read', async () => {
    const store = new CountingStore();
    const cache = lruStateCache<number>();
    await handleCommand({ eventStore: store, streamId: 'counter-1', decider: counter, command: { kind: 'add', by: 9, limit: 10 }, metadata, retry: noSleepPolicy, cache });

    const attempt = handleCommand({ eventStore: store, streamId: 'counter-1', decider: counter, command: { kind: 'add', by: 5, limit: 10 }, metadata, retry: noSleepPolicy, cache });

    await attempt.then(
      () => expect.fail('the command should be refused'),
      (error: unknown) => expect(String(error)).to.contain('over the limit at 9'),
    );
  });
});
