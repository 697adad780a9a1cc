import { expect } from 'chai';
import type { EventStore, Position } from '../../shared/event-store/EventStore.ts';
import type { BatchWrites, Doc, IndexSpec, ReadStore } from '../../shared/read-store/ReadStore.ts';
import { CheckpointProgress } from '../../projections/runner/CheckpointProgress.ts';
import { CHECKPOINTS } from '../../projections/runner/checkpoints.ts';
import type { Projection } from '../../projections/runner/Projection.ts';
import { ProjectionRunner } from '../../projections/runner/ProjectionRunner.ts';

export interface RunnerContractStores {
  /** An empty event store. */
  events(): EventStore;
  /** An empty read store; closed by the test. */
  open(): Promise<ReadStore>;
  /** Another handle on the same read models, as a second process would open it (closed by the test). */
  attach(store: ReadStore): Promise<ReadStore>;
  /**
   * Why a rebuild's swap of this store is not atomic for readers, when it is not (a test double
   * whose rename with dropTarget drops, then renames): the readers' view during a rebuild is then
   * not checked, only the rebuilt models after it.
   */
  swapNotAtomic?: string;
}

type Counter = Doc & { count: number; version: number };

const META = { user_laui: null, correlation_id: 'runner-contract', causation_id: null, at: '2026-01-01T00:00:00.000Z' };

/**
 * Counters: `Incremented` on stream counter-<id> adds one, `Removed` deletes the counter.
 * `version` lets a test change the projection's code for a rebuild (v2 counts double).
 */
const counters = (calls: { evolved: number }, version = { current: 1, failOn: -1 }): Projection<Counter> => ({
  name: 'counters',
  collection: 'rc_counters',
  indexes: [{ fields: ['count'] }],
  handles: new Set(['Incremented', 'Removed']),
  documentId: (event) => event.streamId.slice('counter-'.length),
  evolve: (doc, event) => {
    calls.evolved += 1;
    if (Number(event.position) === version.failOn) throw new Error('this version of the projection fails here');
    if (event.type === 'Removed') return null;
    return { id: event.streamId.slice('counter-'.length), count: (doc?.count ?? 0) + version.current, version: version.current };
  },
});

const append = async (events: EventStore, counter: string, type = 'Incremented'): Promise<Position> =>
  (await events.append(`counter-${counter}`, [{ type, data: {}, metadata: META }], 'any')).position;

/** Appends `count` increments spread over `counters` counters; returns the last position. */
const appendMany = async (events: EventStore, count: number, spread = 7): Promise<Position> => {
  let last: Position = 0n;
  for (let index = 0; index < count; index += 1) last = await append(events, `c${index % spread}`);
  return last;
};

const snapshot = async (store: ReadStore): Promise<Counter[]> =>
  (await store.collection<Counter>('rc_counters').find({ sort: { field: 'id', direction: 'asc' } })).map(({ id, count, version }) => ({ id, count, version }));

/** What a full replay of the log gives, on a fresh store of the same kind. */
const replayed = async (stores: RunnerContractStores, events: EventStore): Promise<Counter[]> => {
  const fresh = await stores.open();
  try {
    const runner = new ProjectionRunner({ name: 'replay', eventStore: events, readStore: fresh, projections: [counters({ evolved: 0 })] });
    await runner.start();
    await runner.stop();
    return await snapshot(fresh);
  } finally {
    await fresh.close();
  }
};

/**
 * A store whose batched commits (or, without batches, whose puts) fail from the `failAt`-th on,
 * after writing the first half of that commit: a projector killed in the middle of a write.
 */
const crashing = (store: ReadStore, failAt: number): ReadStore => {
  let calls = 0;
  const batches: BatchWrites | undefined = store.batches && {
    atomic: store.batches.atomic,
    getMany: (collection, ids) => store.batches!.getMany(collection, ids),
    commit: async (writes) => {
      calls += 1;
      if (calls < failAt) return store.batches!.commit(writes);
      // An atomic commit lands whole or not at all; any other may stop anywhere.
      if (!store.batches!.atomic) await store.batches!.commit(writes.slice(0, Math.floor(writes.length / 2)));
      throw new Error('killed in the middle of a commit');
    },
  };
  return {
    batches,
    collection: <T extends Doc = Doc>(name: string, indexes?: ReadonlyArray<IndexSpec>) => {
      const collection = store.collection<T>(name, indexes);
      if (batches) return collection;
      const adopt = async (doc: T) => {
        calls += 1;
        if (calls >= failAt) throw new Error('killed in the middle of a write');
        return collection.adopt(doc);
      };
      return Object.assign(Object.create(collection) as typeof collection, { adopt });
    },
    rebuild: () => store.rebuild(),
    clear: () => store.clear(),
    close: async () => {},
  };
};

/** The projection runner over a read store: checkpoints, restarts, rebuilds, read-your-writes. */
export const describeProjectionRunnerContract = (name: string, stores: RunnerContractStores): void => {
  describe(`ProjectionRunner contract: ${name}`, () => {
    let store: ReadStore;
    let events: EventStore;
    const closing: Array<() => Promise<unknown>> = [];

    beforeEach(async () => {
      events = stores.events();
      store = await stores.open();
    });

    afterEach(async () => {
      for (const close of closing.splice(0).reverse()) await close();
      await store.close();
      await events.close();
    });

    const runner = (calls = { evolved: 0 }, version = { current: 1, failOn: -1 }, readStore = store, options: { batchSize?: number } = {}) => {
      const created = new ProjectionRunner({ name: 'contract', eventStore: events, readStore, projections: [counters(calls, version)], checkpointEvery: 5, ...options });
      closing.push(() => created.stop());
      return created;
    };

    it('given a log, when started, then the read models hold its projection and the checkpoint its head', async () => {
      await appendMany(events, 40);
      await append(events, 'c3', 'Removed');
      const head = await append(events, 'c9');
      const started = runner();
      await started.start();
      expect(started.position()).to.equal(head);
      expect(await snapshot(store)).to.deep.equal(await replayed(stores, events));
      expect((await snapshot(store)).map((doc) => doc.id)).to.deep.equal(['c0', 'c1', 'c2', 'c4', 'c5', 'c6', 'c9']);
      expect(await store.collection(CHECKPOINTS).get('contract')).to.deep.equal({ id: 'contract', position: head.toString() });
    });

    it('given live events after the catch-up, when waiting for their position, then the models hold them once it resolves', async () => {
      const started = runner();
      await started.start();
      const position = await append(events, 'live');
      expect(await started.waitFor(position, 30_000)).to.equal(true);
      expect(await store.collection<Counter>('rc_counters').get('live')).to.include({ count: 1 });
      expect(await started.waitFor(position + 1000n, 50)).to.equal(false);
    });

    it('given a runner that stopped, when another starts on the same store, then it resumes after the checkpoint: no event is evolved twice', async () => {
      await appendMany(events, 30);
      const first = runner();
      await first.start();
      await first.stop();
      await appendMany(events, 12);
      const calls = { evolved: 0 };
      const second = runner(calls);
      await second.start();
      expect(calls.evolved).to.equal(12);
      expect(await snapshot(store)).to.deep.equal(await replayed(stores, events));
    });

    it('given a projector killed in the middle of a write, when restarted, then the models equal a full replay; with atomic commits it resumes exactly at the checkpoint', async () => {
      await appendMany(events, 60);
      const errors: unknown[] = [];
      const doomed = new ProjectionRunner({
        name: 'contract',
        eventStore: events,
        readStore: crashing(store, 4),
        projections: [counters({ evolved: 0 })],
        checkpointEvery: 5,
        batchSize: 10,
        onError: (error) => errors.push(error),
      });
      const failure = await doomed.start().then(
        () => null,
        (error: unknown) => error,
      );
      expect(String(failure)).to.match(/killed in the middle/);
      await doomed.stop().catch(() => {});
      const checkpoint = BigInt(String((await store.collection(CHECKPOINTS).get('contract'))?.position ?? '0'));
      const calls = { evolved: 0 };
      await runner(calls).start();
      expect(await snapshot(store)).to.deep.equal(await replayed(stores, events));
      if (store.batches?.atomic) expect(calls.evolved).to.equal(60 - Number(checkpoint));
      expect(errors).to.have.length(1);
    });

    it('given a rebuild with a new projection version while events arrive, when it finishes, then readers never saw a half-built model and see the rebuilt one after, and live events go on', async () => {
      await appendMany(events, 30);
      const version = { current: 1, failOn: -1 };
      const live = runner({ evolved: 0 }, version);
      await live.start();
      const before = await snapshot(store);
      expect(before.every((doc) => doc.version === 1)).to.equal(true);
      version.current = 2;
      const rebuilding = live.rebuild();
      const seen: Counter[][] = [];
      let done = false;
      void rebuilding.finally(() => (done = true)).catch(() => {});
      while (!done) {
        seen.push(await snapshot(store));
        await append(events, 'c1');
      }
      await rebuilding;
      // Never a half-built model: every read has every counter, and no count ever goes back.
      const latest = new Map(before.map((doc) => [doc.id, doc.count]));
      if (stores.swapNotAtomic) console.log(`      readers during the swap not checked: ${stores.swapNotAtomic}`);
      for (const read of stores.swapNotAtomic ? [] : seen) {
        expect(read.map((doc) => doc.id)).to.deep.equal(before.map((doc) => doc.id));
        for (const doc of read) {
          expect(doc.count).to.be.at.least(latest.get(doc.id) ?? 0);
          latest.set(doc.id, doc.count);
        }
      }
      const head = await append(events, 'after');
      expect(await live.waitFor(head, 30_000)).to.equal(true);
      const after = await snapshot(store);
      expect(after.every((doc) => doc.version === 2)).to.equal(true);
      const v2 = await replayedWith(stores, events, { current: 2, failOn: -1 });
      expect(after).to.deep.equal(v2);
    });

    it('given a rebuild whose projection fails, when it is run, then it rejects and the live models and runner go on as before', async () => {
      const last = await appendMany(events, 20);
      const version = { current: 1, failOn: -1 };
      const live = runner({ evolved: 0 }, version);
      await live.start();
      const before = await snapshot(store);
      version.current = 2;
      version.failOn = Number(last) - 3;
      const failure = await live.rebuild().then(
        () => null,
        (error: unknown) => error,
      );
      expect(String(failure)).to.match(/fails here/);
      version.failOn = -1;
      version.current = 1;
      expect(await snapshot(store)).to.deep.equal(before);
      const position = await append(events, 'c0');
      expect(await live.waitFor(position, 30_000)).to.equal(true);
      expect(await store.collection<Counter>('rc_counters').get('c0')).to.include({ count: (before[0]?.count ?? 0) + 1 });
    });

    it('given one batch in which a document frees a unique key that another then takes, when applied, then both end as the log says', async () => {
      const people: Projection = {
        name: 'people',
        collection: 'rc_people',
        indexes: [{ fields: ['email'], unique: true }],
        handles: new Set(['EmailSet']),
        documentId: (event) => event.streamId.slice('person-'.length),
        evolve: (_doc, event) => ({ id: event.streamId.slice('person-'.length), email: (event.data as { email: string }).email }),
      };
      const setEmail = (person: string, email: string) => events.append(`person-${person}`, [{ type: 'EmailSet', data: { email }, metadata: META }], 'any');
      const start = async () => {
        const started = new ProjectionRunner({ name: 'people', eventStore: events, readStore: store, projections: [people] });
        closing.push(() => started.stop());
        await started.start();
        return started;
      };
      await setEmail('a', 'x@x');
      await setEmail('b', 'z@x');
      await (await start()).stop();
      // One catch-up batch: b is touched first, so a batched commit writes b's x@x before a lets go of it.
      await setEmail('b', 'w@x');
      await setEmail('a', 'y@x');
      await setEmail('b', 'x@x');
      await start();
      const found = await store.collection('rc_people').find({ sort: { field: 'id', direction: 'asc' } });
      expect(found.map(({ id, email }) => ({ id, email }))).to.deep.equal([
        { id: 'a', email: 'y@x' },
        { id: 'b', email: 'x@x' },
      ]);
    });

    it('given a reader on the same read models, when it waits for a position through the checkpoint, then it resolves once the projector is there, and false on timeout', async () => {
      const reader = await stores.attach(store);
      closing.push(() => reader.close());
      const progress = new CheckpointProgress({ readStore: reader, name: 'contract', pollIntervalMs: 5 });
      const started = runner();
      await started.start();
      const position = await appendMany(events, 5);
      expect(await progress.waitFor(position, 30_000)).to.equal(true);
      expect(progress.position() >= position).to.equal(true);
      expect(await reader.collection<Counter>('rc_counters').count()).to.be.greaterThan(0);
      expect(await progress.waitFor(position + 1000n, 60)).to.equal(false);
      expect(await progress.waitFor(position, 1)).to.equal(true);
    });
  });
};

const replayedWith = async (stores: RunnerContractStores, events: EventStore, version: { current: number; failOn: number }): Promise<Counter[]> => {
  const fresh = await stores.open();
  try {
    const runner = new ProjectionRunner({ name: 'replay', eventStore: events, readStore: fresh, projections: [counters({ evolved: 0 }, version)] });
    await runner.start();
    await runner.stop();
    return await snapshot(fresh);
  } finally {
    await fresh.close();
  }
};


