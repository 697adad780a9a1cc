import { expect } from 'chai';
import type { Doc } from '../../shared/read-store/ReadStore.ts';
import { MemoryReadStore, UniqueIndexViolationError } from './MemoryReadStore.ts';
import { describeReadStoreContract } from './readStoreContract.ts';

describeReadStoreContract('MemoryReadStore', () => new MemoryReadStore());

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
});
