import { expect } from 'chai';
import { MemoryEventStore } from '../../test/support/MemoryEventStore.ts';
import type { EventMetadata } from '../../shared/events.ts';
import { ItemAsOfReader } from './ItemAsOfReader.ts';

const LAUI = '65a0000000000000000000c1';
const STREAM = `item-${LAUI}`;
const meta = (second: number): EventMetadata => ({ user_laui: null, correlation_id: 'c', causation_id: null, at: new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString() });
const time = (second: number, ms = 0): string => new Date(Date.UTC(2026, 0, 1, 0, 0, second, ms)).toISOString();
const access = { owners: {}, editors: {}, viewers: {} };

/** An item created at second 10, edited at seconds 11..10+edits (n = the edit), deleted then restored at the end. */
const given = async (edits: number) => {
  const store = new MemoryEventStore();
  await store.append(STREAM, [{ type: 'ItemCreated', data: { laui: LAUI, item_type: 'payload', name: 'p', parent_laui: null, parent_type: null, link_laui: null, is_root: true, fields: { content: { n: 0 } }, access, version: 1, revision_laui: LAUI }, metadata: meta(10) }], 'any');
  for (let n = 1; n <= edits; n += 1) {
    await store.append(STREAM, [{ type: 'ItemUpdated', data: { changes: { content: { n } }, version: n + 1, revision_laui: LAUI }, metadata: meta(10 + n) }], 'any');
  }
  await store.append(STREAM, [{ type: 'ItemSoftDeleted', data: { at: time(11 + edits) }, metadata: meta(11 + edits) }], 'any');
  await store.append(STREAM, [{ type: 'ItemRestored', data: { at: time(12 + edits) }, metadata: meta(12 + edits) }], 'any');
  return store;
};

describe('ItemAsOfReader: an item at an instant, from snapshots every N events (issue 36)', () => {
  it('given an item edited 20 times, when read at every instant with snapshots every 3 events, then each read equals the plain fold from the start', async () => {
    const store = await given(20);
    const reader = new ItemAsOfReader(store, { every: 3 });
    for (let second = 9; second <= 34; second += 1) {
      for (const ms of [0, 500]) {
        const at = time(second, ms);
        expect(await reader.at(LAUI, at), at).to.deep.equal(await reader.foldFromStart(LAUI, at));
      }
    }
  });

  it('given an item, when read before its creation, during its edits, deleted and restored, then null, the edit of then, deleted_at set, deleted_at cleared', async () => {
    const reader = new ItemAsOfReader(await given(5), { every: 2 });
    expect(await reader.at(LAUI, time(9, 999))).to.equal(null);
    expect((await reader.at(LAUI, time(13, 1)))?.content).to.deep.equal({ n: 3 });
    expect((await reader.at(LAUI, time(16)))?.deleted_at).to.equal(time(16));
    expect((await reader.at(LAUI, time(17)))?.deleted_at).to.equal(null);
  });

  it('given a read that built the snapshots, when the stream grows, then a later read sees the new events and the old instants still read as before', async () => {
    const store = await given(4);
    const reader = new ItemAsOfReader(store, { every: 2 });
    expect((await reader.at(LAUI, time(60)))?.version).to.equal(5);
    await store.append(STREAM, [{ type: 'ItemUpdated', data: { changes: { content: { n: 99 } }, version: 6, revision_laui: LAUI }, metadata: meta(40) }], 'any');
    expect((await reader.at(LAUI, time(60)))?.content).to.deep.equal({ n: 99 });
    expect((await reader.at(LAUI, time(12)))?.content).to.deep.equal({ n: 2 });
  });

  it('given a hard-deleted item, when read at a time it existed, then null', async () => {
    const store = await given(2);
    await store.append(STREAM, [{ type: 'ItemHardDeleted', data: { at: time(50) }, metadata: meta(50) }], 'any');
    expect(await new ItemAsOfReader(store).at(LAUI, time(11))).to.equal(null);
  });

  it('given reads of the same stream at once, when they all catch up, then each gets the fold of its instant', async () => {
    const reader = new ItemAsOfReader(await given(30), { every: 4 });
    const reads = await Promise.all([11, 20, 35, 40].map((second) => reader.at(LAUI, time(second))));
    expect(reads.map((doc) => doc?.content)).to.deep.equal([{ n: 1 }, { n: 10 }, { n: 25 }, { n: 30 }]);
  });

  it('given a snapshot budget smaller than two streams need, when both are read in turn, then the older leaves, the count stays within the budget and every read is still right', async () => {
    const store = await given(20);
    const OTHER = '65a0000000000000000000c2';
    for (const event of await store.readStream(STREAM)) await store.append(`item-${OTHER}`, [{ type: event.type, data: { ...event.data, laui: OTHER }, metadata: event.metadata }], 'any');
    const reader = new ItemAsOfReader(store, { every: 2, snapshots: 15 });
    expect((await reader.at(LAUI, time(15)))?.content).to.deep.equal({ n: 5 });
    expect(reader.snapshotsKept).to.equal(11);
    expect((await reader.at(OTHER, time(16)))?.content).to.deep.equal({ n: 6 });
    expect(reader.snapshotsKept).to.equal(11);
    expect((await reader.at(LAUI, time(17)))?.content).to.deep.equal({ n: 7 });
    expect(reader.snapshotsKept).to.equal(11);
  });
});
