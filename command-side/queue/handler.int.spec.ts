import { expect } from 'chai';
import { MemoryEventStore } from '../../ops/event-store/memory/MemoryEventStore.ts';
import type { AppendResult, EventStore } from '../../shared/event-store/EventStore.ts';
import { metadataFor } from '../../shared/events.ts';
import { queueHandler } from './handler.ts';
import { NOT_IN_QUEUE } from './queue.ts';

const t = (n: number) => `65a0000000000000000000${String(n).padStart(2, '0')}`;
const connection = '65a00000000000000000c0c0';
const meta = (caller: string) => metadataFor(null, new Date('2026-01-01T00:00:00Z'), caller);

/** The store, counting appends: one per queue commit. */
const countingStore = (): { store: EventStore; appends(): number } => {
  const store = new MemoryEventStore();
  let appends = 0;
  const append = store.append.bind(store);
  store.append = async (...args: Parameters<EventStore['append']>): Promise<AppendResult> => {
    appends += 1;
    return append(...args);
  };
  return { store, appends: () => appends };
};

describe('connection queue handler: callers of one connection share commits', () => {
  it('given 20 runs enqueued and dispatched at once on one connection, when decided, then they share commits and each caller gets its own events', async () => {
    const { store, appends } = countingStore();
    const queue = queueHandler(store);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, n) => queue.enqueueManyAndDispatch(connection, { tasks: [{ laui: t(n), priority: 1, sortValues: {} }] }, 5, {}, meta(`caller-${n}`))),
    );
    expect(appends()).to.be.below(20);
    // As if one after another: each caller enqueued its own task, and the first five took the slots.
    for (const [n, result] of results.entries()) expect([...result.enqueued]).to.deep.equal([t(n)]);
    expect(results.flatMap((result) => result.leases.map((lease) => lease.taskLaui))).to.deep.equal([0, 1, 2, 3, 4].map(t));
    expect(results.slice(5).every((result) => result.leases.length === 0)).to.equal(true);
    // Each event carries the metadata of the caller whose command produced it.
    const events = await store.readStream(`queue-${connection}`);
    for (const event of events) expect(event.metadata.correlation_id).to.equal(`caller-${Number((event.data as { task_laui: string }).task_laui.slice(-2))}`);
  });

  it('given a release of a task not in the queue among concurrent enqueues, when decided, then only that caller gets the 404', async () => {
    const { store } = countingStore();
    const queue = queueHandler(store);
    const [first, missing, second] = await Promise.allSettled([
      queue.enqueue(connection, { laui: t(1), priority: 1, sortValues: {} }, meta('a')),
      queue.release(connection, t(9), null, 'finished', meta('b')),
      queue.enqueue(connection, { laui: t(2), priority: 1, sortValues: {} }, meta('c')),
    ]);
    expect(first.status === 'fulfilled' && first.value.enqueued).to.equal(true);
    expect(missing.status === 'rejected' && String((missing.reason as { detail?: unknown }).detail ?? missing.reason)).to.include(NOT_IN_QUEUE);
    expect(second.status === 'fulfilled' && second.value.enqueued).to.equal(true);
    expect([...(await queue.state(connection)).waiting.keys()]).to.deep.equal([t(1), t(2)]);
  });

  it('given a commit in flight, when more callers arrive, then they wait for it and go together in the next commit', async () => {
    const { store, appends } = countingStore();
    const queue = queueHandler(store);
    const first = queue.enqueue(connection, { laui: t(1), priority: 1, sortValues: {} }, meta('a'));
    await new Promise((resolve) => setImmediate(resolve));
    const later = await Promise.all([2, 3, 4].map((n) => queue.enqueue(connection, { laui: t(n), priority: 1, sortValues: {} }, meta(`x${n}`))));
    await first;
    expect(later.every((result) => result.enqueued)).to.equal(true);
    expect(appends()).to.equal(2);
  });
});
