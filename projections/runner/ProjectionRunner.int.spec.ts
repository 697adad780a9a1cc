import { expect } from 'chai';
import type { Doc, IndexSpec } from '../../shared/read-store/ReadStore.ts';
import { waitUntil } from '../../test/support/waitUntil.ts';
import type { Projection } from './Projection.ts';
import { ProjectionRunner } from './ProjectionRunner.ts';
import { MemoryEventStore } from '../../test/support/MemoryEventStore.ts';
import { MemoryReadStore } from '../read-store/MemoryReadStore.ts';
import { describeProjectionRunnerContract } from '../../test/contracts/projectionRunnerContract.ts';

describeProjectionRunnerContract('memory read store (one write per document)', {
  events: () => new MemoryEventStore(),
  open: async () => new MemoryReadStore(),
  attach: async (store) => store,
});

describeProjectionRunnerContract('memory read store with sequential batches (the path of a standalone MongoDB)', {
  events: () => new MemoryEventStore(),
  open: async () => new MemoryReadStore({ batches: true }),
  attach: async (store) => store,
});

describe('ProjectionRunner.atRest (a snapshot\'s capture)', () => {
  const META = { user_laui: null, correlation_id: 'at-rest', causation_id: null, at: '2026-01-01T00:00:00.000Z' };
  const copyTo = (collection: string): Projection<Doc> => ({
    name: collection,
    collection,
    indexes: [],
    handles: new Set(['Happened']),
    documentId: (event) => event.streamId,
    evolve: (_doc, event) => ({ id: event.streamId, at: Number(event.position) }),
  });

  it('given an event half applied (its first projection\'s write pending), when a capture is asked, then it runs once the event is wholly applied, with its position', async () => {
    const events = new MemoryEventStore();
    const position = (await events.append('x', [{ type: 'Happened', data: {}, metadata: META }], 'any')).position;
    const store = new MemoryReadStore();
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let firstWriteStarted = false;
    const first = store.collection('first');
    // The first projection's write waits for the gate: the event is half applied meanwhile.
    const gated = new Proxy(store, {
      get: (target, property, receiver) =>
        property === 'collection'
          ? (name: string, indexes?: ReadonlyArray<IndexSpec>) =>
              name !== 'first'
                ? target.collection(name, indexes)
                : new Proxy(first, {
                    get: (collection, key, inner) =>
                      key === 'adopt'
                        ? async (doc: Doc) => {
                            firstWriteStarted = true;
                            await gate;
                            await collection.adopt(doc);
                          }
                        : (Reflect.get(collection, key, inner) as unknown),
                  })
          : (Reflect.get(target, property, receiver) as unknown),
    });
    const runner = new ProjectionRunner({ name: 'at-rest', eventStore: events, readStore: gated, projections: [copyTo('first'), copyTo('second')] });
    const started = runner.start();
    await waitUntil(() => firstWriteStarted, 'the first projection writes');
    let captured: { position: bigint; first: number; second: number } | null = null;
    const capture = runner.atRest(() => (captured = { position: runner.position(), first: store.capture().get('first')?.length ?? 0, second: store.capture().get('second')?.length ?? 0 }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(captured, 'not while the event is half applied').to.equal(null);
    release();
    expect(await capture).to.deep.equal({ position, first: 1, second: 1 });
    await started;
    // Idle: at once, synchronously.
    let ranAtOnce = false;
    void runner.atRest(() => (ranAtOnce = true));
    expect(ranAtOnce).to.equal(true);
    await runner.stop();
  });
});

describe('ProjectionRunner followers (caches that follow the live log, issue 36)', () => {
  const META = { user_laui: null, correlation_id: 'followers', causation_id: null, at: '2026-01-01T00:00:00.000Z' };
  const copy: Projection<Doc> = {
    name: 'copies',
    collection: 'copies',
    indexes: [],
    handles: new Set(['Happened']),
    documentId: (event) => event.streamId,
    evolve: (_doc, event) => ({ id: event.streamId }),
  };

  it('given a log of 3 events, when the runner starts and 2 more events of a followed type and 1 other arrive, then the follower is told of the 2 live ones only, after their documents are applied', async () => {
    // Given
    const events = new MemoryEventStore();
    for (const stream of ['a', 'b', 'c']) await events.append(stream, [{ type: 'Happened', data: {}, metadata: META }], 'any');
    const store = new MemoryReadStore();
    const told: Array<[string, boolean]> = [];
    const copies = store.collection('copies');
    const follower = { handles: new Set(['Happened']), follow: (event: { streamId: string }) => void copies.get(event.streamId).then((doc) => told.push([event.streamId, doc !== null])) };
    const runner = new ProjectionRunner({ name: 'followers', eventStore: events, readStore: store, projections: [copy], followers: [follower] });
    await runner.start();
    // When
    await events.append('d', [{ type: 'Happened', data: {}, metadata: META }], 'any');
    await events.append('e', [{ type: 'Other', data: {}, metadata: META }], 'any');
    const { position } = await events.append('f', [{ type: 'Happened', data: {}, metadata: META }], 'any');
    expect(await runner.waitFor(position, 5_000)).to.equal(true);
    await waitUntil(() => told.length === 2, 'the follower told of both live events');
    await runner.stop();
    // Then
    expect(told).to.deep.equal([
      ['d', true],
      ['f', true],
    ]);
  });
});
