import { expect } from 'chai';
import { MemoryEventStore } from '../../test/support/MemoryEventStore.ts';
import type { EventStore, ExpectedRevision } from '../../shared/event-store/EventStore.ts';
import type { CompanionAppend, CompanionPlanner } from '../kernel/CompanionAppend.ts';
import { metadataFor } from '../../shared/events.ts';
import { queueHandler, type QueueRun } from './handler.ts';
import { NOT_IN_QUEUE } from './queue.ts';
import type { QueueEvent } from '../../shared/domain-events/queueEvents.ts';
import { withoutAtomicAppends } from '../../test/support/withoutAtomicAppends.ts';
import { interceptAppends } from '../../test/support/interceptAppends.ts';

const t = (n: number) => `65a0000000000000000000${String(n).padStart(2, '0')}`;
const connection = '65a00000000000000000c0c0';
const meta = (caller: string) => metadataFor(null, new Date('2026-01-01T00:00:00Z'), caller);

/** A store counting its commits (appends, atomic or not): one per queue commit. */
const countingStore = (wrap: (store: EventStore) => EventStore): { store: EventStore; appends(): number } => {
  let commits = 0;
  const store = interceptAppends(wrap(new MemoryEventStore()), () => {
    commits += 1;
  });
  return { store, appends: () => commits };
};

for (const [kind, wrap] of [
  ['with multi-stream transactions', (store: EventStore) => store],
  ['one stream at a time', withoutAtomicAppends],
] as const) describe(`connection queue handler (${kind}): callers of one connection share commits`, () => {
  it('given 20 runs enqueued and dispatched at once on one connection, when decided, then they share commits and each caller gets its own events', async () => {
    const { store, appends } = countingStore(wrap);
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
    const { store } = countingStore(wrap);
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
    const { store, appends } = countingStore(wrap);
    const queue = queueHandler(store);
    const first = queue.enqueue(connection, { laui: t(1), priority: 1, sortValues: {} }, meta('a'));
    await new Promise((resolve) => setImmediate(resolve));
    const later = await Promise.all([2, 3, 4].map((n) => queue.enqueue(connection, { laui: t(n), priority: 1, sortValues: {} }, meta(`x${n}`))));
    await first;
    expect(later.every((result) => result.enqueued)).to.equal(true);
    expect(appends()).to.equal(2);
  });
});

/** The caller's side of a QueueRun: each decision answered with the planner's appends. */
const answered = async <Result>(run: QueueRun<Result>, plan: CompanionPlanner<QueueEvent>): Promise<Result> => {
  for await (const turn of run.decisions) turn.commitWith(plan(turn.events, turn.fresh));
  return run.result;
};

describe('connection queue handler: companion appends', () => {
  const companionFor =
    (store: EventStore, calls: Array<{ leases: number; fresh: boolean }>, committed: bigint[]): CompanionPlanner<QueueEvent> =>
    async (events, fresh) => {
      const leased = events.filter((event) => event.type === 'TaskLeased');
      calls.push({ leases: leased.length, fresh });
      // The companion's stream as a cached guess would have it: revision 0 unless read afresh.
      const revision: ExpectedRevision = fresh ? ((await store.readStream('task-side')).at(-1)?.revision ?? 'no_stream') : 'no_stream';
      return leased.map((event): CompanionAppend => ({
        append: { streamId: 'task-side', events: [{ type: 'Leased', data: { task: event.type === 'TaskLeased' ? event.data.task_laui : null }, metadata: meta('c') }], expected: revision },
        guessed: !fresh,
        committed: (result) => void committed.push(result.position),
      }));
    };

  it('given a dispatch with a companion, when a slot is leased, then the lease and the companion events are one commit', async () => {
    const { store, appends } = countingStore((inner) => inner);
    const queue = queueHandler(store);
    const calls: Array<{ leases: number; fresh: boolean }> = [];
    const committed: bigint[] = [];

    const result = await answered(queue.decideManyAndDispatch(connection, { tasks: [{ laui: t(1), priority: 1, sortValues: {} }] }, 1, {}, meta('a')), companionFor(store, calls, committed));

    expect(appends()).to.equal(1);
    expect((await store.readStream('task-side')).map((event) => event.data)).to.deep.equal([{ task: t(1) }]);
    expect(committed).to.deep.equal([result.position]);
    expect(calls).to.deep.equal([{ leases: 1, fresh: false }]);
  });

  it('given a companion whose guessed revision is stale, when committed, then the decision is planned again at once on fresh reads and written once', async () => {
    const { store } = countingStore((inner) => inner);
    await store.append('task-side', [{ type: 'Other', data: {}, metadata: meta('x') }], 'no_stream');
    // One attempt only: a conflict counted as contention would end in write_conflict before any backoff,
    // so success proves the stale guess cost an immediate fresh attempt outside the policy (no sleep).
    const queue = queueHandler(store, { attempts: 1, baseDelayMs: 10_000 });
    const calls: Array<{ leases: number; fresh: boolean }> = [];

    await answered(queue.decideManyAndDispatch(connection, { tasks: [{ laui: t(1), priority: 1, sortValues: {} }] }, 1, {}, meta('a')), companionFor(store, calls, []));

    expect(calls).to.deep.equal([
      { leases: 1, fresh: false },
      { leases: 1, fresh: true },
    ]);
    // The arrival and its lease are one event on the stream (writtenEvents).
    const written = await store.readStream(`queue-${connection}`);
    expect(written.map((event) => event.type)).to.deep.equal(['TaskLeased']);
    expect(written[0]?.data).to.deep.include({ task_laui: t(1), enqueued: { priority: 1, sort_values: {}, at: meta('a').at } });
    expect((await store.readStream('task-side')).map((event) => event.type)).to.deep.equal(['Other', 'Leased']);
  });

  it('given a store without multi-stream transactions, when dispatched with a companion, then the companion is appended on its own after the queue decision', async () => {
    const { store, appends } = countingStore(withoutAtomicAppends);
    const queue = queueHandler(store);
    const calls: Array<{ leases: number; fresh: boolean }> = [];
    const committed: bigint[] = [];

    const result = await answered(queue.decideManyAndDispatch(connection, { tasks: [{ laui: t(1), priority: 1, sortValues: {} }] }, 1, {}, meta('a')), companionFor(store, calls, committed));

    expect(result.leases.map((lease) => lease.taskLaui)).to.deep.equal([t(1)]);
    expect(calls).to.deep.equal([{ leases: 1, fresh: false }]);
    expect(appends()).to.equal(2);
    const [leased] = await store.readStream(`queue-${connection}`);
    const [companion] = await store.readStream('task-side');
    expect(companion?.data).to.deep.equal({ task: t(1) });
    expect((companion?.position as bigint) > (leased?.position as bigint)).to.equal(true);
    expect(committed).to.deep.equal([companion?.position]);
    expect(result.position).to.equal(companion?.position);
  });

  it('given a caller enqueueing a task and another freeing the slot it takes in one decision, when planned, then only the enqueuer plans that lease', async () => {
    const { store } = countingStore((inner) => inner);
    const queue = queueHandler(store);
    const first = await queue.enqueueManyAndDispatch(connection, { tasks: [{ laui: t(1), priority: 1, sortValues: {} }] }, 1, {}, meta('a'));
    const session = first.leases[0]?.sessionId as string;
    const seen = new Map<string, string[]>();
    const recording =
      (caller: string): CompanionPlanner<QueueEvent> =>
      async (events) => {
        seen.set(caller, events.map((event) => `${event.type}:${event.data.task_laui.slice(-2)}`));
        return [];
      };

    // Same tick: one batch, one decision. The enqueue comes first and waits for a slot; the finish
    // after it frees one, and its dispatch leases the waiting task.
    const [enqueued, finished] = await Promise.all([
      answered(queue.decideManyAndDispatch(connection, { tasks: [{ laui: t(2), priority: 1, sortValues: {} }] }, 1, {}, meta('b')), recording('enqueuer')),
      answered(queue.decideManyAndDispatch(connection, { tasks: [], finished: [{ taskLaui: t(1), sessionId: session }] }, 1, {}, meta('c')), recording('finisher')),
    ]);

    expect(finished.leases.map((lease) => lease.taskLaui)).to.deep.equal([t(2)]);
    expect(enqueued.leases).to.deep.equal([]);
    expect(seen.get('enqueuer')).to.deep.equal(['TaskEnqueued:02', 'TaskLeased:02']);
    expect(seen.get('finisher')).to.deep.equal(['TaskSlotReleased:01']);
  });
});
