import { expect } from 'chai';
import { MemoryReadStore } from '../../projections/read-store/MemoryReadStore.ts';
import { itemsProjection } from '../../projections/catalog/itemsProjection.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import { cycleCandidates } from './schedulerCycle.ts';

const task = (laui: string, seq: number, extra: Record<string, unknown> = {}): Record<string, unknown> & { id: string } => ({
  id: laui,
  laui,
  item_type: 'task',
  project_laui: 'p',
  is_deleted: false,
  state: 'scheduled',
  frequency: '0 * * * *',
  start_date: '2026-01-01T00:00:00Z',
  logical_date: '2026-06-01T11:00:00Z',
  next_run_date: '2026-06-01T11:00:00Z',
  created_seq: seq,
  ...extra,
});

describe('scheduler cycle candidates', () => {
  it('given a due task and its backfill lane (a copy just as due), when a cycle looks for due tasks, then only the task is a candidate: a lane never runs on the cron', async () => {
    const items = new MemoryReadStore().collection('items', itemsProjection.indexes);
    await items.put(task('task-1', 1));
    await items.put(task('lane-1', 2, { backfill_lane_of: 'task-1', backfill_lane: { backfill_id: 'b', lane: 1 } }));

    const found = await cycleCandidates({ items: items as unknown as Collection<ItemDoc> }, 'p', new Date('2026-06-01T12:00:00Z'));

    expect(found.map((doc) => doc.laui)).to.deep.equal(['task-1']);
  });
});
