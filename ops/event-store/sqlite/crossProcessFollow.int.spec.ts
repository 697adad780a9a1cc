import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Position, Subscription } from '../../../shared/event-store/EventStore.ts';
import { openSqliteEventStore, type SqliteEventStore } from './SqliteEventStore.ts';
import { sleep, waitUntil } from '../../../test/support/waitUntil.ts';

const event = (n: number) => ({ type: 'ItemDeleted', data: { laui: `65b0000000000000000000${String(n).padStart(2, '0')}` }, metadata: { user_laui: null, correlation_id: `c${n}`, causation_id: null, at: '2026-11-25T00:00:00.000Z' } });

/**
 * Two stores on one file stand for two processes sharing DATA_DIR: one learns of the other's
 * events only by reading the file. Every subscription of a store must, not only the first to look:
 * the store's poll throttle is shared by its subscriptions (projections, the domain-events publisher).
 */
describe('SqliteEventStore: following another process through the file', function () {
  this.timeout(240_000);
  let dir: string;
  let stores: SqliteEventStore[];
  let subscriptions: Subscription[];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'orchestrator-follow-'));
    stores = [];
    subscriptions = [];
  });

  afterEach(async () => {
    await Promise.all(subscriptions.map((subscription) => subscription.close()));
    await Promise.all(stores.map((store) => store.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  const open = async () => {
    const store = openSqliteEventStore({ file: join(dir, 'events.sqlite'), synchronous: 'normal', pollIntervalMs: 100 });
    await store.writerReady();
    stores.push(store);
    return store;
  };

  it('given two subscriptions in one process, when another process appends, then both see its events (the polling of neither starves the other)', async () => {
    const here = await open();
    const there = await open();
    await here.append('item-a', [event(1)], 'any');
    const seen: Position[][] = [[], []];
    for (const [index, list] of seen.entries()) {
      subscriptions.push(here.subscribeToAll({ after: 0n, onEvent: (recorded) => void list.push(recorded.position) }));
      // Out of phase, as a projection runner and a publisher started at different moments are.
      if (index === 0) await sleep(45);
    }
    await waitUntil(() => seen.every((list) => list.length === 1), 'both subscriptions caught up');
    for (let round = 0; round < 3; round += 1) {
      const { position } = await there.append(`item-b${round}`, [event(round + 2)], 'any');
      // Starved, a subscription never sees it: the generous deadline tells that apart on any machine.
      await waitUntil(() => seen.every((list) => list.includes(position)), `both subscriptions saw the other process's event ${round + 1}`);
    }
  });
});
