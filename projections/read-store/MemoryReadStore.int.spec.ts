import { expect } from 'chai';
import type { Doc, IndexSpec } from '../../shared/read-store/ReadStore.ts';
import { MemoryReadStore, UniqueIndexViolationError } from './MemoryReadStore.ts';
import { describeReadStoreContract } from '../../test/contracts/readStoreContract.ts';

describeReadStoreContract('MemoryReadStore', () => new MemoryReadStore());
describeReadStoreContract('MemoryReadStore with sequential batches', () => new MemoryReadStore({ batches: true }));

describe('MemoryReadStore', () => {
  it('given many candidates, when a small sorted page is asked, then it equals the same page of a full sort', async () => {
    const store = new MemoryReadStore();
    const runs = store.collection<Doc & { group: string; score: number | null }>('runs', [{ fields: ['group'] }]);
    for (let i = 0; i < 2000; i += 1) {
      // Few distinct scores and some nulls, so that ties and null placement are exercised.
      await runs.put({ id: `r${(i * 7919) % 2000}`, group: i % 2 === 0 ? 'even' : 'odd', score: i % 13 === 0 ? null : i % 17 });
    }
    for (const direction of ['asc', 'desc'] as const) {
      const sort = { field: 'score', direction };
      const full = await runs.find({ where: { group: 'even' }, sort });
      const paged = await runs.find({ where: { group: 'even' }, sort, skip: 30, limit: 20 });
      expect(full).to.have.length(1000);
      expect(paged).to.deep.equal(full.slice(30, 50));
      expect((await runs.find({ sort, limit: 5 })).map((doc) => doc.id)).to.deep.equal(
        (await runs.find({ sort })).slice(0, 5).map((doc) => doc.id),
      );
    }
  });

  it('given duplicate values, when a unique index is declared later, then it throws and is not added', async () => {
    const store = new MemoryReadStore();
    const users = store.collection('users', [{ fields: ['email'] }]);
    await users.put({ id: 'u1', email: 'a@x', name: 'n', tag: 't1' });
    await users.put({ id: 'u2', email: 'a@x', name: 'n', tag: 't2' });
    expect(() => store.collection('users', [{ fields: ['name'], unique: true }])).to.throw(UniqueIndexViolationError);
    // All or none: the tag index would build fine, but its declaration fails with the email one.
    const both = [{ fields: ['tag'], unique: true }, { fields: ['email'], unique: true }];
    expect(() => store.collection('users', both)).to.throw(UniqueIndexViolationError);
    await users.put({ id: 'u3', email: 'a@x', name: 'n', tag: 't1' });
    expect(await users.count({ email: 'a@x', name: 'n' })).to.equal(3);
  });

  it('given distinct values, when a unique index is declared later, then it rejects a duplicate put', async () => {
    const store = new MemoryReadStore();
    const users = store.collection('users');
    await users.put({ id: 'u1', email: 'a@x' });
    store.collection('users', [{ fields: ['email'], unique: true }]);
    let error: unknown = null;
    await users.put({ id: 'u2', email: 'a@x' }).catch((caught: unknown) => (error = caught));
    expect(error).to.be.instanceOf(UniqueIndexViolationError);
    expect(error).to.include({ collection: 'users', existingId: 'u1', rejectedId: 'u2', key: '["a@x"]' });
  });

  it('given a negative or fractional limit or skip, when finding, then a RangeError names it', async () => {
    const docs = new MemoryReadStore().collection('docs');
    for (const options of [{ limit: -1 }, { skip: 1.5 }]) {
      const error = await docs.find(options).then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(error).to.be.instanceOf(RangeError);
      expect(String(error)).to.match(/limit|skip/);
    }
  });

  it('given limit 0, when finding, then no document is returned', async () => {
    const docs = new MemoryReadStore().collection('docs');
    await docs.put({ id: 'a' });
    expect(await docs.find({ limit: 0 })).to.deep.equal([]);
    expect(await docs.find({ limit: 0, sort: { field: 'id', direction: 'asc' } })).to.deep.equal([]);
  });

  describe('ordered reads by a creation sequence', () => {
    const ids = (docs: Array<{ id: string }>) => docs.map((doc) => doc.id);

    it('given docs inserted with an increasing sequence, when sorted by it both ways, then pages match a full sort', async () => {
      const docs = new MemoryReadStore().collection('docs', [{ fields: ['kind'] }]);
      for (let index = 0; index < 50; index += 1) await docs.put({ id: `d${String(49 - index).padStart(2, '0')}`, kind: index % 2 ? 'odd' : 'even', seq: index * 3 });
      const asc = await docs.find({ where: { kind: 'odd' }, sort: { field: 'seq', direction: 'asc' }, skip: 2, limit: 4 });
      expect(asc.map((doc) => doc.seq)).to.deep.equal([15, 21, 27, 33]);
      const desc = await docs.find({ where: { kind: 'even' }, sort: { field: 'seq', direction: 'desc' }, limit: 3 });
      expect(desc.map((doc) => doc.seq)).to.deep.equal([144, 138, 132]);
      // The id order is the reverse of insertion here, so an id-based shortcut would fail this.
      expect(ids(await docs.find({ sort: { field: 'seq', direction: 'asc' }, limit: 2 }))).to.deep.equal(['d49', 'd48']);
    });

    it('given a later doc out of sequence or a moved indexed value, when sorted, then the result is still a true sort', async () => {
      const docs = new MemoryReadStore().collection('docs', [{ fields: ['kind'] }]);
      await docs.put({ id: 'a', kind: 'x', seq: 1 });
      await docs.put({ id: 'b', kind: 'x', seq: 2 });
      expect(ids(await docs.find({ where: { kind: 'x' }, sort: { field: 'seq', direction: 'asc' } }))).to.deep.equal(['a', 'b']);
      await docs.put({ id: 'c', kind: 'x', seq: 0 });
      expect(ids(await docs.find({ where: { kind: 'x' }, sort: { field: 'seq', direction: 'asc' } }))).to.deep.equal(['c', 'a', 'b']);

      const moved = new MemoryReadStore().collection('moved', [{ fields: ['kind'] }]);
      await moved.put({ id: 'a', kind: 'y', seq: 1 });
      await moved.put({ id: 'b', kind: 'x', seq: 2 });
      await moved.put({ id: 'a', kind: 'x', seq: 1 });
      expect(ids(await moved.find({ where: { kind: 'x' }, sort: { field: 'seq', direction: 'asc' } }))).to.deep.equal(['a', 'b']);
    });
  });

  describe('range queries', () => {
    const seed = async (ordered: boolean) => {
      const docs = new MemoryReadStore().collection('tasks', [{ fields: ['project'] }, ...(ordered ? [{ fields: ['due'], ordered: true }] : [])]);
      for (let index = 0; index < 200; index += 1) {
        await docs.put({ id: `t${String(index).padStart(3, '0')}`, project: index % 2 ? 'a' : 'b', due: index % 10 === 0 ? null : `2026-01-${String((index % 28) + 1).padStart(2, '0')}` });
      }
      return docs;
    };

    for (const ordered of [true, false]) {
      it(`given ${ordered ? 'an ordered index' : 'no ordered index'}, when finding due <= a date with an equality, then exactly the matching documents come back`, async () => {
        const docs = await seed(ordered);
        const found = await docs.find({ where: { project: 'a' }, range: { field: 'due', lte: '2026-01-03' }, sort: { field: 'id', direction: 'asc' } });
        const expected = Array.from({ length: 200 }, (_, index) => index).filter(
          (index) => index % 2 === 1 && index % 10 !== 0 && (index % 28) + 1 <= 3,
        );
        expect(found.map((doc) => doc.id)).to.deep.equal(expected.map((index) => `t${String(index).padStart(3, '0')}`));
        const between = await docs.find({ range: { field: 'due', gte: '2026-01-27', lte: '2026-01-28' } });
        expect(between).to.have.length(Array.from({ length: 200 }, (_, index) => index).filter((index) => index % 10 !== 0 && (index % 28) + 1 >= 27).length);
      });
    }

    it('given an ordered index, when a value changes or a document is deleted, then the range follows', async () => {
      const docs = await seed(true);
      await docs.put({ id: 't001', project: 'a', due: '2030-01-01' });
      await docs.delete('t003');
      const found = await docs.find({ where: { project: 'a' }, range: { field: 'due', lte: '2026-12-31' } });
      expect(found.map((doc) => doc.id)).to.not.include.members(['t001', 't003']);
      const later = await docs.find({ range: { field: 'due', gte: '2030-01-01' } });
      expect(later.map((doc) => doc.id)).to.deep.equal(['t001']);
    });
  });

  describe('a snapshot restored: indexes built in the background', () => {
    const indexes = [{ fields: ['kind'] }, { fields: ['kind', 'name'] }, { fields: ['email'], unique: true }, { fields: ['due'], ordered: true }];
    const snapshotOf = (count: number): Doc[] =>
      Array.from({ length: count }, (_, index) => ({ id: `d${String(index).padStart(5, '0')}`, kind: index % 3 === 0 ? 'a' : 'b', name: `n${index % 10}`, email: `e${index}@x`, due: index % 7 }));
    const ids = (docs: Doc[]) => docs.map((doc) => doc.id).sort();

    // A snapshot's chunks of 700 (restoreChunk, what a load does): decoded at once into a collection
    // with a unique index (its index must hold every key from the start), left undecoded until first
    // read into one without.
    const loaders: Array<[string, IndexSpec[], boolean]> = [
      ['documents restored decoded (a unique index)', indexes, true],
      ['documents restored undecoded (no unique index)', indexes.filter((index) => index.unique !== true), false],
    ];
    for (const [loaded, declared, unique] of loaders) {
    it(`given ${loaded} and writes while the indexes are built, when read during and after the build, then every answer equals a store that was written document by document`, async () => {
      const store = new MemoryReadStore();
      const docs = store.collection('docs', declared);
      const decoded = restoreInChunks(store, 'docs', snapshotOf(5000), 700);
      expect(decoded.count, 'chunks decoded by the load').to.equal(unique ? 8 : 0);
      const reference = new MemoryReadStore().collection('docs', declared);
      for (const doc of snapshotOf(5000)) await reference.put(doc);
      const building = (docs as unknown as { buildIndexes(slice: number): Promise<void> }).buildIndexes(500);
      // Meanwhile: a new document, a moved one, a deleted one, one deleted and written again.
      const writes: Array<(target: typeof docs) => Promise<void>> = [
        (target) => target.put({ id: 'new', kind: 'a', name: 'n1', email: 'new@x', due: 3 }),
        (target) => target.put({ id: 'd04999', kind: 'a', name: 'n9', email: 'e4999@x', due: 100 }),
        (target) => target.put({ id: 'd00001', kind: 'a', name: 'n2', email: 'e1@x', due: 1 }),
        (target) => target.delete('d00003'),
        (target) => target.delete('d00004'),
        (target) => target.put({ id: 'd00004', kind: 'b', name: 'n4', email: 'e4@x', due: 4 }),
      ];
      const queries = async (target: typeof docs) => [
        ids(await target.find({ where: { kind: 'a' } })),
        ids(await target.find({ where: { kind: 'b', name: 'n4' } })),
        ids(await target.find({ range: { field: 'due', gte: 3, lte: 3 } })),
        await target.count({ kind: 'a' }),
        (await target.find({ where: { kind: 'a' }, sort: { field: 'id', direction: 'asc' }, limit: 3 })).map((doc) => doc.id),
      ];
      for (const write of writes) {
        await write(docs);
        await write(reference);
        expect(await queries(docs)).to.deep.equal(await queries(reference));
      }
      await building;
      expect(await queries(docs)).to.deep.equal(await queries(reference));
      if (!unique) return;
      // The unique index held from the start: a duplicate email is refused as before.
      const refused = await docs.put({ id: 'dup', kind: 'a', email: 'e10@x' }).then(() => null, (error: unknown) => error);
      expect(refused).to.be.instanceOf(UniqueIndexViolationError);
    });
    }

    it('given duplicates restored and an index not built yet, when it is declared unique, then the declaration is refused as with every document indexed', async () => {
      const store = new MemoryReadStore();
      store.collection('docs', [{ fields: ['name'] }]);
      restoreInChunks(store, 'docs', snapshotOf(3000), 700);
      // Not built yet: the background build has not started.
      expect(() => store.collection('docs', [{ fields: ['name'], unique: true }])).to.throw(UniqueIndexViolationError);
    });

    it('given the store cleared while its indexes are built, when the build goes on, then the indexes follow the documents written after the clear', async () => {
      const store = new MemoryReadStore();
      const docs = store.collection('docs', indexes);
      restoreInChunks(store, 'docs', snapshotOf(3000), 700);
      const building = store.buildIndexes();
      await store.clear();
      await docs.put({ id: 'after', kind: 'a', name: 'n1', email: 'after@x', due: 1 });
      await building;
      expect(ids(await docs.find({ where: { kind: 'a' } }))).to.deep.equal(['after']);
      expect(await docs.count({ kind: 'b' })).to.equal(0);
    });
  });

  describe('a snapshot loaded undecoded (restoreChunk): documents decoded on first access', () => {
    const snapshotOf = (count: number): Doc[] =>
      Array.from({ length: count }, (_, index) => ({ id: `d${String(index).padStart(4, '0')}`, kind: index % 2 === 0 ? 'even' : 'odd', email: `e${index}@x`, nested: { n: index } }));

    it('given a loaded store, when documents are read, then each equals the one saved, and only the chunks read were decoded, once each', async () => {
      const store = new MemoryReadStore();
      const docs = store.collection('docs');
      const decoded = restoreInChunks(store, 'docs', snapshotOf(1000), 100);
      expect(decoded.count, 'nothing decoded by the load').to.equal(0);
      expect(await docs.get('d0150')).to.deep.equal(snapshotOf(1000)[150]);
      expect(await docs.get('d0199')).to.deep.equal(snapshotOf(1000)[199]);
      expect(decoded.count, 'one chunk, once').to.equal(1);
      expect(await docs.get('missing')).to.equal(null);
      expect(await docs.find()).to.deep.equal(snapshotOf(1000));
      expect(decoded.count).to.equal(10);
    });

    it('given documents written before their chunk is decoded (changed, deleted, deleted and written again), when read, then the writes hold and the order is a Map\'s', async () => {
      const store = new MemoryReadStore();
      const docs = store.collection('docs');
      restoreInChunks(store, 'docs', snapshotOf(300), 100);
      await docs.put({ id: 'd0105', kind: 'changed' });
      await docs.delete('d0210');
      await docs.delete('d0001');
      await docs.put({ id: 'd0001', kind: 'again' });
      const reference = new MemoryReadStore().collection('docs');
      for (const doc of snapshotOf(300)) await reference.put(doc);
      await reference.put({ id: 'd0105', kind: 'changed' });
      await reference.delete('d0210');
      await reference.delete('d0001');
      await reference.put({ id: 'd0001', kind: 'again' });
      expect(await docs.find()).to.deep.equal(await reference.find());
      expect(await docs.count()).to.equal(299);
    });

    it('given writes before and after the ids are merged into one index, when read, then every answer equals a store written document by document', async () => {
      const store = new MemoryReadStore();
      const docs = store.collection('docs');
      const reference = new MemoryReadStore().collection('docs');
      for (const doc of snapshotOf(500)) await reference.put(doc);
      restoreInChunks(store, 'docs', snapshotOf(500), 100);
      const writes: Array<(target: typeof docs) => Promise<void>> = [
        (target) => target.delete('d0050'),
        (target) => target.put({ id: 'd0050', kind: 'back, last' }),
        (target) => target.put({ id: 'd0499', kind: 'changed in place' }),
        (target) => target.put({ id: 'new', kind: 'even' }),
      ];
      for (const write of writes.slice(0, 2)) {
        await write(docs);
        await write(reference);
      }
      await store.buildIndexes();
      for (const write of writes.slice(2)) {
        await write(docs);
        await write(reference);
      }
      await docs.delete('d0051');
      await reference.delete('d0051');
      expect(await docs.find()).to.deep.equal(await reference.find());
      expect([await docs.get('d0050'), await docs.get('d0051'), await docs.count()]).to.deep.equal([await reference.get('d0050'), null, 500]);
    });

    it('given a collection holding documents already, when a snapshot chunk is loaded into it, then it is taken decoded, as puts', async () => {
      const store = new MemoryReadStore();
      const docs = store.collection('docs');
      await docs.put({ id: 'd0002', kind: 'before' });
      const decoded = restoreInChunks(store, 'docs', snapshotOf(5), 5);
      expect(decoded.count).to.equal(1);
      expect((await docs.find()).map((doc) => doc.id)).to.deep.equal(['d0002', 'd0000', 'd0001', 'd0003', 'd0004']);
    });

    it('given a unique index, when a duplicate key is written right after the load, then it is refused, declared before the load or after it', async () => {
      for (const declaredBefore of [true, false]) {
        const store = new MemoryReadStore();
        if (declaredBefore) store.collection('docs', [{ fields: ['email'], unique: true }]);
        restoreInChunks(store, 'docs', snapshotOf(500), 100);
        const docs = store.collection('docs', [{ fields: ['email'], unique: true }]);
        const refused = await docs.put({ id: 'dup', email: 'e420@x' }).then(() => null, (error: unknown) => error);
        expect(refused, `declared ${declaredBefore ? 'before' : 'after'} the load`).to.be.instanceOf(UniqueIndexViolationError);
        await docs.put({ id: 'd0420', email: 'e420@x', kind: 'same key, same document' });
        expect(await docs.get('d0420')).to.include({ kind: 'same key, same document' });
      }
    });

    it('given a query on a non-unique field, when asked before the background build and after it, then the answers are the same', async () => {
      const store = new MemoryReadStore();
      const docs = store.collection('docs', [{ fields: ['kind'] }]);
      const decoded = restoreInChunks(store, 'docs', snapshotOf(1000), 100);
      const before = [await docs.find({ where: { kind: 'odd' }, skip: 10, limit: 20 }), await docs.count({ kind: 'even' })];
      await store.buildIndexes();
      expect(decoded.count, 'every chunk decoded by the build').to.equal(10);
      expect([await docs.find({ where: { kind: 'odd' }, skip: 10, limit: 20 }), await docs.count({ kind: 'even' })]).to.deep.equal(before);
      expect(before[1]).to.equal(500);
    });

    it('given a scan before the indexes are built, when its equality is none of a chunk\'s values, then that chunk is skipped undecoded and the answer is the same', async () => {
      const store = new MemoryReadStore();
      const docs = store.collection('docs', [{ fields: ['kind'] }]);
      const mixed = snapshotOf(1000).map((doc, index) => (index >= 300 && index < 400 ? { ...doc, kind: 'rare' } : doc));
      const decoded = restoreInChunks(store, 'docs', mixed, 100);
      await docs.put({ id: 'written', kind: 'rare' });
      expect(await docs.find({ where: { kind: 'none' } })).to.deep.equal([]);
      expect(decoded.count).to.equal(0);
      expect((await docs.find({ where: { kind: 'rare' } })).map((doc) => doc.id)).to.deep.equal([...mixed.slice(300, 400).map((doc) => doc.id), 'written']);
      expect(decoded.count, 'the one chunk holding them').to.equal(1);
      expect(await docs.count({ kind: 'odd', email: 'e5@x' })).to.equal(1);
    });

    it('given a chunk that does not decode to the documents its ids list, when one of them is read, then the read fails rather than answer another document', async () => {
      const store = new MemoryReadStore();
      const docs = store.collection('docs');
      const values = new Map<string, unknown[]>();
      store.restoreChunk('docs', { ids: ['a', 'b'], values, decode: () => [{ id: 'a' }] });
      store.restoreChunk('docs', { ids: ['c', 'd'], values, decode: () => [{ id: 'c' }, { id: 'x' }] });
      store.restoreChunk('docs', {
        ids: ['e'],
        values,
        decode: () => {
          throw new Error('a chunk of documents of another shape');
        },
      });
      expect(await docs.get('a').then(() => null, (error: unknown) => String(error))).to.match(/not the 2 its ids list/);
      expect(await docs.get('d').then(() => null, (error: unknown) => String(error))).to.match(/not the 2 its ids list/);
      expect(await docs.get('e').then(() => null, (error: unknown) => String(error))).to.match(/another shape/);
    });
  });
});

/** Restores `docs` as a snapshot's load does: chunks of `size` ids, each decoded when first read; counts the decodes. */
const restoreInChunks = (store: MemoryReadStore, name: string, docs: Doc[], size: number): { count: number } => {
  const decoded = { count: 0 };
  for (let start = 0; start < docs.length; start += size) {
    const chunk = docs.slice(start, start + size);
    const text = JSON.stringify(chunk);
    store.restoreChunk(name, {
      ids: chunk.map((doc) => doc.id),
      // As a snapshot's head lists them: a field every document holds as a string, with its values.
      values: chunk.every((doc) => typeof doc.kind === 'string') ? new Map([['kind', [...new Set(chunk.map((doc) => doc.kind))]]]) : new Map(),
      decode: () => {
        decoded.count += 1;
        return JSON.parse(text) as Doc[];
      },
    });
  }
  return decoded;
};
