import { expect } from 'chai';
import { MemoryEventStore } from '../../test/support/MemoryEventStore.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { EventStore, ReadStreamOptions, RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { FoldCheckpoint, FoldCheckpoints } from './FoldCheckpoints.ts';
import { ItemAsOfReader } from './ItemAsOfReader.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';

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

  describe('kept beyond the process and followed as the log grows', () => {
    /** Snapshots kept as a DATA_DIR file would keep them: JSON out and back in, nothing shared. */
    const keptSnapshots = () => {
      const rows = new Map<string, string[]>();
      const kept: FoldCheckpoints & { count(): number } = {
        load: (streamId) => Promise.resolve((rows.get(streamId) ?? []).map((row) => JSON.parse(row) as FoldCheckpoint)),
        save: (streamId, checkpoints) => {
          rows.set(streamId, [...(rows.get(streamId) ?? []), ...checkpoints.map((checkpoint) => JSON.stringify(checkpoint))]);
          return Promise.resolve();
        },
        count: () => [...rows.values()].reduce((sum, list) => sum + list.length, 0),
      };
      return kept;
    };
    /** The store's events handed out by readStream since the last `take()`: what a read costs. */
    const counted = (store: MemoryEventStore) => {
      let read = 0;
      const readStream = store.readStream.bind(store);
      const counting = Object.assign(Object.create(store) as EventStore, {
        readStream: async (streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> => {
          const events = await readStream(streamId, options);
          read += events.length;
          return events;
        },
      });
      return { store: counting, take: () => [read, (read = 0)][0] as number };
    };

    it('given a stream of 62 events folded by one reader with kept snapshots, when a new reader (a restart) reads any instant, then it reads at most 2 x every events and equals the plain fold', async () => {
      // Given
      const memory = await given(60);
      const kept = keptSnapshots();
      await new ItemAsOfReader(memory, { every: 5, checkpoints: kept }).at(LAUI, time(99));
      expect(kept.count()).to.equal(12);
      const { store, take } = counted(memory);
      const restarted = new ItemAsOfReader(store, { every: 5, checkpoints: kept });
      // When / then: the first read loads the kept snapshots and reads the stream after the last one.
      expect((await restarted.at(LAUI, time(40)))?.content).to.deep.equal({ n: 30 });
      expect(take()).to.be.at.most(10);
      for (const second of [9, 10, 25, 41, 70, 71, 72, 99]) {
        expect(await restarted.at(LAUI, time(second, 500)), String(second)).to.deep.equal(await restarted.foldFromStart(LAUI, time(second, 500)));
      }
      expect(kept.count(), 'nothing saved twice').to.equal(12);
    });

    it('given a reader following the log, when a stream grows by `every` events with no read, then it is folded in the background and a later read reads one segment and the events after the last snapshot', async () => {
      // Given
      const memory = await given(0);
      const kept = keptSnapshots();
      const { store, take } = counted(memory);
      const reader = new ItemAsOfReader(store, { every: 10, checkpoints: kept });
      // When: 40 edits, each told to the reader as the projection runner would.
      for (let n = 1; n <= 40; n += 1) {
        const { position } = await memory.append(STREAM, [{ type: 'ItemUpdated', data: { changes: { content: { n } }, version: n + 1, revision_laui: LAUI }, metadata: meta(20 + n) }], 'any');
        const [event] = await memory.readAll({ after: position - 1n, maxCount: 1 });
        reader.follow(event as RecordedEvent);
      }
      await reader.settled();
      // Then: the read catches up with the 3 events after the last snapshot (revision 39) and folds
      // one segment of at most 10 to its instant, where a cold fold would read all 43.
      expect(kept.count()).to.equal(4);
      take();
      expect((await reader.at(LAUI, time(45)))?.content).to.deep.equal({ n: 25 });
      expect(take()).to.be.at.most(13);
    });

    it('given a stream whose fold the reader holds, when it grows by events told in order, then they are folded as told (no read of the store), snapshots kept on the grid, and reads equal the plain fold', async () => {
      // Given: a read that holds the stream's fold (head at its last event).
      const memory = await given(2);
      const kept = keptSnapshots();
      const { store, take } = counted(memory);
      const reader = new ItemAsOfReader(store, { every: 10, checkpoints: kept });
      expect((await reader.at(LAUI, time(99)))?.content).to.deep.equal({ n: 2 });
      take();
      // When: 40 edits, each told to the reader as the projection runner would.
      for (let n = 3; n <= 42; n += 1) {
        const { position } = await memory.append(STREAM, [{ type: 'ItemUpdated', data: { changes: { content: { n } }, version: n + 1, revision_laui: LAUI }, metadata: meta(20 + n) }], 'any');
        const [event] = await memory.readAll({ after: position - 1n, maxCount: 1 });
        reader.follow(event as RecordedEvent);
      }
      await reader.settled();
      // Then: nothing was read back; the snapshots at revisions 9, 19, 29 and 39 were kept.
      expect(take(), 'events read from the store').to.equal(0);
      expect(kept.count()).to.equal(4);
      for (const second of [12, 25, 40, 61, 62, 99]) {
        expect(await reader.at(LAUI, time(second, 500)), String(second)).to.deep.equal(await reader.foldFromStart(LAUI, time(second, 500)));
      }
    });

    it('given a held fold, when events are told after a read returned the head and after snapshots were kept, then neither the returned document nor a kept snapshot changes (the fold is written into a document of its own only)', async () => {
      // Given: snapshots kept as objects (not JSON), and a read that hands out the head.
      const memory = await given(2);
      const held: FoldCheckpoint[] = [];
      const reader = new ItemAsOfReader(memory, { every: 5, checkpoints: { load: () => Promise.resolve([]), save: (_, checkpoints) => Promise.resolve(void held.push(...checkpoints)) } });
      const returned = await reader.at(LAUI, time(99));
      const returnedText = JSON.stringify(returned);
      const middle: Array<ItemDoc | null> = [];
      // When: 20 edits told in order (after the delete and restore at revisions 3 and 4, revision r
      // holds {n: r - 2}), with a read of the head among them.
      for (let n = 3; n <= 22; n += 1) {
        const { position } = await memory.append(STREAM, [{ type: 'ItemUpdated', data: { changes: { content: { n } }, version: n + 1, revision_laui: LAUI }, metadata: meta(20 + n) }], 'any');
        const [event] = await memory.readAll({ after: position - 1n, maxCount: 1 });
        reader.follow(event as RecordedEvent);
        // A read between two snapshots (revision 15): the head it returns is a fold of the reader's own.
        if (n === 13) middle.push(await reader.at(LAUI, time(99)));
      }
      await reader.settled();
      // Then: the documents the reads returned are as they were; each snapshot holds its own revision's edit.
      expect(JSON.stringify(returned)).to.equal(returnedText);
      expect((middle[0]?.content as { n: number }).n).to.equal(13);
      expect(held.map((checkpoint) => [checkpoint.revision, (checkpoint.doc?.content as { n: number }).n])).to.deep.equal([
        [4, 2],
        [9, 7],
        [14, 12],
        [19, 17],
        [24, 22],
      ]);
      expect(await reader.at(LAUI, time(99))).to.deep.equal(await reader.foldFromStart(LAUI, time(99)));
    });

    it('given a held fold and an event told out of order (one missed), when followed, then it is not folded into the head, and a read still equals the plain fold', async () => {
      const memory = await given(2);
      const reader = new ItemAsOfReader(memory, { every: 100 });
      await reader.at(LAUI, time(99));
      await memory.append(STREAM, [{ type: 'ItemUpdated', data: { changes: { content: { n: 3 } }, version: 4, revision_laui: LAUI }, metadata: meta(23) }], 'any');
      const { position } = await memory.append(STREAM, [{ type: 'ItemUpdated', data: { changes: { content: { n: 4 } }, version: 5, revision_laui: LAUI }, metadata: meta(24) }], 'any');
      const [skipped] = await memory.readAll({ after: position - 1n, maxCount: 1 });
      reader.follow(skipped as RecordedEvent);
      expect((await reader.at(LAUI, time(23, 500)))?.content).to.deep.equal({ n: 3 });
      expect(await reader.at(LAUI, time(99))).to.deep.equal(await reader.foldFromStart(LAUI, time(99)));
    });

    it('given events of other streams or off the grid, when followed, then nothing is folded', async () => {
      const memory = await given(8);
      const kept = keptSnapshots();
      const reader = new ItemAsOfReader(memory, { every: 5, checkpoints: kept });
      const events = await memory.readStream(STREAM);
      reader.follow({ ...(events[4] as RecordedEvent), streamId: `group-${LAUI}` });
      reader.follow(events[5] as RecordedEvent);
      await reader.settled();
      expect(kept.count()).to.equal(0);
      reader.follow(events[4] as RecordedEvent);
      await reader.settled();
      expect(kept.count()).to.equal(2);
    });

    it('given snapshots kept on another grid (another `every`), when read, then they are not used and the read is still right', async () => {
      const memory = await given(20);
      const kept = keptSnapshots();
      await new ItemAsOfReader(memory, { every: 4, checkpoints: kept }).at(LAUI, time(99));
      const reader = new ItemAsOfReader(memory, { every: 3, checkpoints: kept });
      expect(await reader.at(LAUI, time(17))).to.deep.equal(await reader.foldFromStart(LAUI, time(17)));
    });

    it('given kept snapshots that cannot be read, when read, then the read folds from the log and the error is reported', async () => {
      const errors: unknown[] = [];
      const broken: FoldCheckpoints = { load: () => Promise.reject(new Error('disk gone')), save: () => Promise.reject(new Error('disk gone')) };
      const reader = new ItemAsOfReader(await given(10), { every: 3, checkpoints: broken, onCacheError: (error) => errors.push(error) });
      expect((await reader.at(LAUI, time(15)))?.content).to.deep.equal({ n: 5 });
      expect(errors.map(String)).to.deep.equal(['Error: disk gone', 'Error: disk gone']);
    });

    it('given a stream hard-deleted on a snapshot boundary, when a new reader reads it from the kept snapshots, then null', async () => {
      const memory = await given(1);
      await memory.append(STREAM, [{ type: 'ItemHardDeleted', data: { at: time(50) }, metadata: meta(50) }], 'any');
      const kept = keptSnapshots();
      await new ItemAsOfReader(memory, { every: 5, checkpoints: kept }).at(LAUI, time(99));
      expect(kept.count()).to.equal(1);
      expect(await new ItemAsOfReader(memory, { every: 5, checkpoints: kept }).at(LAUI, time(11))).to.equal(null);
    });
  });
});
