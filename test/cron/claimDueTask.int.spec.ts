import { expect } from 'chai';
import { metadataFor } from '../../shared/events.ts';
import { MemoryEventStore } from '../support/MemoryEventStore.ts';
import { itemStream } from '../../command-side/catalog/item.ts';
import { claimDueTask, releaseClaim } from '../../command-side/cron/claimDueTask.ts';

const TASK = '65a000000000000000000001';
const now = new Date('2024-06-10T12:00:00.000Z');
const metadata = metadataFor(null, now, 'test');

const created = (fields: Record<string, unknown>) => ({
  type: 'ItemCreated',
  data: {
    laui: TASK,
    item_type: 'task',
    name: 'daily',
    parent_laui: null,
    parent_type: null,
    link_laui: null,
    is_root: false,
    fields: { frequency: '0 0 * * *', start_date: '2024-06-03T01:00:00.000Z', end_date: '2024-07-01T00:00:00.000Z', ...fields },
    access: { owners: {}, editors: {}, viewers: {} },
    version: 1,
    revision_laui: TASK,
  },
  metadata,
});
const updated = (changes: Record<string, unknown>) => ({ type: 'ItemUpdated', data: { changes, version: 1, revision_laui: null }, metadata });

describe('claimDueTask: the optimistic guard against double dispatch (memory event store)', () => {
  it('given loops racing on one due task, when they all claim at once, then exactly one claim per logical date wins', async () => {
    const store = new MemoryEventStore();
    await store.append(itemStream(TASK), [created({ state: 'scheduled', logical_date: '2024-06-03T00:00:00.000Z', next_run_date: '2024-06-04T00:00:00.000Z' })], 'no_stream');
    const claimedLogicalDates: string[] = [];
    for (let day = 3; day <= 9; day += 1) {
      const claims = await Promise.all(Array.from({ length: 6 }, () => claimDueTask(store, TASK, now, 'ACTIVE', metadata)));
      const winners = claims.filter((claim) => claim !== null);
      expect(winners, `day ${day}`).to.have.length(1);
      claimedLogicalDates.push(String(winners[0]?.fields.logical_date));
      // The run ends: success advances both dates one step (the next one still due until the 10th).
      await store.append(
        itemStream(TASK),
        [updated({ state: 'success', logical_date: `2024-06-${String(day + 1).padStart(2, '0')}T00:00:00.000Z`, next_run_date: `2024-06-${String(day + 2).padStart(2, '0')}T00:00:00.000Z` })],
        'any',
      );
    }
    expect(claimedLogicalDates).to.deep.equal(['03', '04', '05', '06', '07', '08', '09'].map((day) => `2024-06-${day}T00:00:00.000Z`));
    // next_run_date is now tomorrow: a loop that read a stale (due) copy claims nothing.
    expect(await claimDueTask(store, TASK, now, 'ACTIVE', metadata)).to.equal(null);
    const claims = (await store.readStream(itemStream(TASK))).filter((event) => (event.data as { changes?: { state?: string } }).changes?.state === 'queued_for_connection');
    expect(claims).to.have.length(7);
  });

  it('given a paused workflow, a cancel request or a claimed task, when claimed, then nothing is written', async () => {
    const store = new MemoryEventStore();
    await store.append(itemStream(TASK), [created({ state: 'success', logical_date: '2024-06-03T00:00:00.000Z', next_run_date: '2024-06-04T00:00:00.000Z' })], 'no_stream');
    expect(await claimDueTask(store, TASK, now, 'PAUSE', metadata)).to.equal(null);
    await store.append(itemStream(TASK), [updated({ user_set_state: 'cancel' })], 'any');
    expect(await claimDueTask(store, TASK, now, 'ACTIVE', metadata)).to.equal(null);
    await store.append(itemStream(TASK), [updated({ user_set_state: null })], 'any');
    const claim = await claimDueTask(store, TASK, now, 'ACTIVE', metadata);
    expect(claim).to.deep.include({ path: 'scheduled' });
    expect(claim?.fields.state).to.equal('success');
    expect(await claimDueTask(store, TASK, now, 'ACTIVE', metadata)).to.equal(null);
    expect((await store.readStream(itemStream(TASK))).length).to.equal(4);
  });

  it('given a claim whose dispatch failed, when released, then the task is back in its previous state and due again', async () => {
    const store = new MemoryEventStore();
    await store.append(itemStream(TASK), [created({ state: 'error', retry_number: 1, total_retries: 3, retry_interval: 1, last_run_date: '2024-06-10T11:00:00.000Z' })], 'no_stream');
    const claim = await claimDueTask(store, TASK, now, null, metadata);
    expect(claim?.path).to.equal('retry');
    await releaseClaim(store, TASK, 'error', metadata);
    const last = (await store.readStream(itemStream(TASK))).at(-1);
    expect((last?.data as { changes: Record<string, unknown> }).changes).to.deep.equal({ state: 'error' });
    expect((await claimDueTask(store, TASK, now, null, metadata))?.path).to.equal('retry');
  });
});
