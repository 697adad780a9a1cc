import { expect } from 'chai';
import type { Doc, ReadStore } from '../../shared/read-store/ReadStore.ts';
import { UniqueIndexViolationError } from '../../projections/read-store/UniqueIndexViolationError.ts';

const ids = (docs: ReadonlyArray<Doc>): string[] => docs.map((doc) => doc.id).sort();

const rejection = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => Promise.reject(new Error('expected the promise to reject')),
    (error: unknown) => error,
  );

/** Rebuild into staged collections, then swap. Part of describeReadStoreContract. */
export const describeRebuildContract = (storeOf: () => ReadStore): void => {
  describe('rebuild', () => {
    it('given live documents, when a rebuild fills staged collections, then readers see the live ones until the swap and the rebuilt ones after', async () => {
      const store = storeOf();
      const users = store.collection('rb_users', [{ fields: ['email'], unique: true }]);
      const beats = store.collection('rb_beats');
      await users.put({ id: 'u1', email: 'old@x' });
      await beats.put({ id: 'beat', at: 1 });
      const staged = await store.rebuild();
      // No index named: the live collection's come along.
      const rebuilt = staged.collection('rb_users');
      await rebuilt.put({ id: 'u2', email: 'new@x' });
      await staged.collection('rb_new_model').put({ id: 'n1' });
      expect(ids(await users.find())).to.deep.equal(['u1']);
      expect(await store.collection('rb_new_model').count()).to.equal(0);
      await staged.swap();
      // The handle taken before the rebuild reads the rebuilt collection.
      expect(ids(await users.find())).to.deep.equal(['u2']);
      expect(ids(await users.find({ where: { email: 'new@x' } }))).to.deep.equal(['u2']);
      expect(ids(await store.collection('rb_new_model').find())).to.deep.equal(['n1']);
      // Not staged, not touched.
      expect(await beats.get('beat')).to.deep.equal({ id: 'beat', at: 1 });
      expect(await rejection(users.put({ id: 'u3', email: 'new@x' }))).to.be.instanceOf(UniqueIndexViolationError);
    });

    it('given a rebuild, when it is discarded, then the live collections are unchanged and the staged store refuses more work', async () => {
      const store = storeOf();
      const users = store.collection('rb_users');
      await users.put({ id: 'u1' });
      const staged = await store.rebuild();
      await staged.collection('rb_users').put({ id: 'u2' });
      await staged.discard();
      expect(ids(await users.find())).to.deep.equal(['u1']);
      expect(await rejection((async () => staged.collection('rb_users').put({ id: 'u3' }))())).to.be.instanceOf(Error);
      expect(await rejection(staged.swap())).to.be.instanceOf(Error);
      // A new rebuild starts empty, whatever the discarded one had written.
      const again = await store.rebuild();
      expect(await again.collection('rb_users').count()).to.equal(0);
      await again.discard();
    });
  });
};

/** Batched writes, where a store offers them. Part of describeReadStoreContract. */
export const describeBatchContract = (storeOf: () => ReadStore): void => {
  describe('batched writes', () => {
    beforeEach(function () {
      if (!storeOf().batches) {
        console.log('      skipped: this store has no batched writes (the runner writes document by document)');
        this.skip();
      }
    });

    it('given a commit of puts and deletes over two collections, when read back many at once, then the last write of each id holds', async () => {
      const store = storeOf();
      const batches = store.batches;
      if (!batches) throw new Error('no batches');
      await store.collection('b_docs').put({ id: 'gone', n: 0 });
      await batches.commit([
        { collection: 'b_docs', id: 'a', doc: { id: 'a', n: 1 } },
        { collection: 'b_docs', id: 'b', doc: { id: 'b', n: 2, 'x.y': { $z: 1 } } },
        { collection: 'b_other', id: 'x', doc: { id: 'x' } },
        { collection: 'b_docs', id: 'a', doc: null },
        { collection: 'b_docs', id: 'gone', doc: null },
        { collection: 'b_docs', id: 'b', doc: { id: 'b', n: 3, 'x.y': { $z: 1 } } },
      ]);
      const found = await batches.getMany('b_docs', ['a', 'b', 'gone', 'never']);
      expect([...found.keys()]).to.deep.equal(['b']);
      expect(found.get('b')).to.deep.equal({ id: 'b', n: 3, 'x.y': { $z: 1 } });
      expect(await store.collection('b_other').get('x')).to.deep.equal({ id: 'x' });
      expect((await batches.getMany('b_docs', [])).size).to.equal(0);
    });

    it('given a commit whose second write breaks a unique index, then it rejects with UniqueIndexViolationError; atomic, none landed; otherwise only the first', async () => {
      const store = storeOf();
      const batches = store.batches;
      if (!batches) throw new Error('no batches');
      const users = store.collection('b_users', [{ fields: ['email'], unique: true }]);
      await users.put({ id: 'u1', email: 'a@x' });
      const error = await rejection(
        batches.commit([
          { collection: 'b_users', id: 'u2', doc: { id: 'u2', email: 'b@x' } },
          { collection: 'b_users', id: 'u3', doc: { id: 'u3', email: 'a@x' } },
          { collection: 'b_marks', id: 'checkpoint', doc: { id: 'checkpoint', position: '9' } },
        ]),
      );
      expect(error).to.be.instanceOf(UniqueIndexViolationError);
      expect(error).to.include({ collection: 'b_users', rejectedId: 'u3', existingId: 'u1' });
      expect(await users.get('u2')).to.deep.equal(batches.atomic ? null : { id: 'u2', email: 'b@x' });
      expect(await users.get('u3')).to.equal(null);
      expect(await store.collection('b_marks').get('checkpoint')).to.equal(null);
    });
  });
};
