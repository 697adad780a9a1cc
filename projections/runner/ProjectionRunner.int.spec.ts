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
