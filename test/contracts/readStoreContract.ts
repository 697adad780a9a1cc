import { expect } from 'chai';
import type { Collection, Doc, IndexSpec, ReadStore } from '../../shared/read-store/ReadStore.ts';
import { UniqueIndexViolationError } from '../../projections/read-store/UniqueIndexViolationError.ts';
import { describeBatchContract, describeRebuildContract } from './readStoreRebuildContract.ts';
import { describeValueContract } from './readStoreValueContract.ts';

/** Must return a store holding no documents; it is closed after each test. */
export type ReadStoreFactory = () => ReadStore | Promise<ReadStore>;

/** Contract clauses a stand-in may not honour; never set for a real store. */
export type ContractClause = 'partialUniqueIndexes';

export interface ReadStoreContractOptions {
  /**
   * Clauses skipped, each with the reason printed: only for a test double of a real store (the
   * MongoDB wire-protocol double), whose real store runs the whole contract elsewhere.
   */
  lacks?: Partial<Record<ContractClause, string>>;
}

/** Skips the running test with the reason printed when the store under test lacks the clause. */
export const unlessLacking = (options: ReadStoreContractOptions, clause: ContractClause, test: () => Promise<void>) =>
  async function (this: Mocha.Context): Promise<void> {
    const reason = options.lacks?.[clause];
    if (reason !== undefined) {
      console.log(`      skipped on this store: ${reason}`);
      this.skip();
    }
    await test();
  };

type Task = Doc & { project: string; state: string; priority?: number | null; title?: string | null };

const TASK_INDEXES: ReadonlyArray<IndexSpec> = [{ fields: ['project'] }, { fields: ['project', 'state'] }];

const ids = (docs: ReadonlyArray<Doc>): string[] => docs.map((doc) => doc.id);

const rejection = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => Promise.reject(new Error('expected the promise to reject')),
    (error: unknown) => error,
  );

/** The behaviour every ReadStore adapter shares; run it once per adapter. */
export const describeReadStoreContract = (name: string, factory: ReadStoreFactory, options: ReadStoreContractOptions = {}): void => {
  describe(`ReadStore contract: ${name}`, () => {
    let store: ReadStore;
    let tasks: Collection<Task>;

    const putAll = async (docs: ReadonlyArray<Task>) => {
      for (const doc of docs) await tasks.put(doc);
    };

    beforeEach(async () => {
      store = await factory();
      tasks = store.collection<Task>('contract_tasks', TASK_INDEXES);
    });

    afterEach(() => store.close());

    describe('get, put, delete', () => {
      it('given an empty collection, when getting an id, then null is returned', async () => {
        expect(await tasks.get('t1')).to.equal(null);
      });

      it('given a put document, when getting its id, then an equal document is returned', async () => {
        await tasks.put({ id: 't1', project: 'p1', state: 'new', tags: ['a'], meta: { n: 1 } });
        expect(await tasks.get('t1')).to.deep.equal({ id: 't1', project: 'p1', state: 'new', tags: ['a'], meta: { n: 1 } });
      });

      it('given a stored document, when put again with fewer fields, then it is replaced whole', async () => {
        await tasks.put({ id: 't1', project: 'p1', state: 'new', title: 'old' });
        await tasks.put({ id: 't1', project: 'p1', state: 'done' });
        expect(await tasks.get('t1')).to.deep.equal({ id: 't1', project: 'p1', state: 'done' });
        expect(await tasks.count()).to.equal(1);
      });

      it('given two documents, when one is deleted, then only the other remains and no index finds it', async () => {
        await putAll([
          { id: 't1', project: 'p1', state: 'new' },
          { id: 't2', project: 'p1', state: 'new' },
        ]);
        await tasks.delete('t1');
        await tasks.delete('missing');
        expect(await tasks.get('t1')).to.equal(null);
        expect(ids(await tasks.find({ where: { project: 'p1' } }))).to.deep.equal(['t2']);
        expect(await tasks.count({ project: 'p1', state: 'new' })).to.equal(1);
      });
    });

    describe('find and count', () => {
      beforeEach(async () => {
        await putAll([
          { id: 't1', project: 'p1', state: 'new', title: 'a' },
          { id: 't2', project: 'p1', state: 'done', title: 'b' },
          { id: 't3', project: 'p2', state: 'new', title: 'a' },
          { id: 't4', project: 'p1', state: 'new', title: 'b' },
          { id: 't5', project: 'p2', state: 'done' },
        ]);
      });

      it('given documents, when finding by an indexed field, then exactly the matching ones are returned', async () => {
        expect(ids(await tasks.find({ where: { project: 'p1' } })).sort()).to.deep.equal(['t1', 't2', 't4']);
      });

      it('given documents, when finding by an unindexed field, then exactly the matching ones are returned', async () => {
        expect(ids(await tasks.find({ where: { title: 'a' } })).sort()).to.deep.equal(['t1', 't3']);
      });

      it('given documents, when finding by indexed and unindexed fields together, then every equality holds', async () => {
        const found = await tasks.find({ where: { project: 'p1', state: 'new', title: 'b' } });
        expect(ids(found)).to.deep.equal(['t4']);
        expect(ids(await tasks.find({ where: { project: 'p2', title: 'a' } }))).to.deep.equal(['t3']);
        expect(await tasks.find({ where: { project: 'p2', state: 'new', title: 'b' } })).to.deep.equal([]);
      });

      it('given documents, when finding by id with another field, then both must match', async () => {
        expect(ids(await tasks.find({ where: { id: 't4', state: 'new' } }))).to.deep.equal(['t4']);
        expect(await tasks.find({ where: { id: 't4', state: 'done' } })).to.deep.equal([]);
        expect(await tasks.count({ id: 'missing' })).to.equal(0);
      });

      it('given a missing field and an explicit null, when finding by null, then both documents match', async () => {
        await tasks.put({ id: 't6', project: 'p3', state: 'new', title: null });
        await tasks.put({ id: 't7', project: 'p3', state: 'new', title: 'c' });
        expect(ids(await tasks.find({ where: { project: 'p3', title: null } }))).to.deep.equal(['t6']);
        expect(ids(await tasks.find({ where: { title: null } })).sort()).to.deep.equal(['t5', 't6']);
      });

      it('given documents, when counting, then the count equals what find returns', async () => {
        expect(await tasks.count()).to.equal(5);
        expect(await tasks.count({ project: 'p1' })).to.equal(3);
        expect(await tasks.count({ project: 'p1', state: 'new' })).to.equal(2);
        expect(await tasks.count({ project: 'p2', title: 'a' })).to.equal(1);
        expect(await tasks.count({ project: 'none' })).to.equal(0);
      });
    });

    describe('sort and pages', () => {
      beforeEach(async () => {
        // b has no priority at all, a an explicit null; g is outside the where of most tests.
        const priorities = [['d', 2], ['a', null], ['e', 10], ['b', undefined], ['c', 2], ['f', -1]] as const;
        for (const [id, priority] of priorities) {
          await tasks.put({ id, project: 'p', state: 's', ...(priority === undefined ? {} : { priority }) });
        }
        await tasks.put({ id: 'g', project: 'other', state: 's', priority: 0 });
      });

      it('given numbers and nulls, when sorting ascending, then numbers order numerically, ties by id, nulls last', async () => {
        const found = await tasks.find({ where: { project: 'p' }, sort: { field: 'priority', direction: 'asc' } });
        expect(ids(found)).to.deep.equal(['f', 'c', 'd', 'e', 'a', 'b']);
      });

      it('given numbers and nulls, when sorting descending, then the largest come first, ties by id, nulls last', async () => {
        const found = await tasks.find({ where: { project: 'p' }, sort: { field: 'priority', direction: 'desc' } });
        expect(ids(found)).to.deep.equal(['e', 'c', 'd', 'f', 'a', 'b']);
      });

      it('given strings, when sorting, then they compare by code unit and not as numbers', async () => {
        const names = store.collection<Doc & { name: string }>('contract_names');
        for (const [id, name] of [['1', 'b10'], ['2', 'B'], ['3', 'b9'], ['4', 'a']] as const) await names.put({ id, name });
        expect(ids(await names.find({ sort: { field: 'name', direction: 'asc' } }))).to.deep.equal(['2', '4', '1', '3']);
        expect(ids(await names.find({ sort: { field: 'name', direction: 'desc' } }))).to.deep.equal(['3', '1', '4', '2']);
      });

      it('given a sort, when reading pages with skip and limit, then pages cover the order once', async () => {
        const sort = { field: 'priority', direction: 'asc' } as const;
        const pages = [];
        for (let skip = 0; skip < 8; skip += 2) pages.push(ids(await tasks.find({ sort, skip, limit: 2 })));
        expect(pages).to.deep.equal([['f', 'g'], ['c', 'd'], ['e', 'a'], ['b']]);
      });

      it('given no sort, when limiting, then at most limit documents are returned and skip drops others', async () => {
        const all = ids(await tasks.find({ where: { project: 'p' } }));
        const first = ids(await tasks.find({ where: { project: 'p' }, limit: 4 }));
        const rest = ids(await tasks.find({ where: { project: 'p' }, skip: 4 }));
        expect(first).to.have.length(4);
        expect([...first, ...rest].sort()).to.deep.equal([...all].sort());
        expect(all).to.have.length(6);
      });
    });

      it('given a sort, a where and a page, when peeking instead of finding, then the same documents come back in the same order', async () => {
        for (const options of [
          { where: { project: 'p' }, sort: { field: 'priority', direction: 'desc' } },
          { sort: { field: 'priority', direction: 'asc' }, skip: 2, limit: 3 },
          { where: { project: 'p' }, limit: 4 },
        ] as const) {
          expect(await tasks.peekFind(options)).to.deep.equal(await tasks.find(options));
        }
      });

    describe('unique indexes', () => {
      let users: Collection<Doc & { email: string; handle: string }>;

      beforeEach(async () => {
        users = store.collection('contract_users', [{ fields: ['email'], unique: true }, { fields: ['handle'], unique: true }]);
        await users.put({ id: 'u1', email: 'a@x', handle: 'ann' });
        await users.put({ id: 'u2', email: 'b@x', handle: 'bob' });
      });

      it('given a held key, when another document is put with it, then the put fails and nothing changes', async () => {
        const error = await rejection(users.put({ id: 'u3', email: 'c@x', handle: 'ann' }));
        expect(error).to.be.instanceOf(UniqueIndexViolationError);
        expect(await users.get('u3')).to.equal(null);
        expect(await users.count({ email: 'c@x' })).to.equal(0);
        expect(await users.count()).to.equal(2);
      });

      it('given a held key, when an existing document is updated to take it, then its old values stay indexed', async () => {
        expect(await rejection(users.put({ id: 'u2', email: 'new@x', handle: 'ann' }))).to.be.instanceOf(UniqueIndexViolationError);
        expect(await users.get('u2')).to.deep.equal({ id: 'u2', email: 'b@x', handle: 'bob' });
        expect(ids(await users.find({ where: { email: 'b@x' } }))).to.deep.equal(['u2']);
        expect(await users.find({ where: { email: 'new@x' } })).to.deep.equal([]);
        await users.put({ id: 'u3', email: 'new@x', handle: 'cy' });
      });

      it('given a document, when it is put again with its own unique values, then the put succeeds', async () => {
        await users.put({ id: 'u1', email: 'a@x', handle: 'ann', bio: 'hi' });
        expect(await users.get('u1')).to.deep.equal({ id: 'u1', email: 'a@x', handle: 'ann', bio: 'hi' });
      });

      it('given a key released by an update, when another document takes it, then the put succeeds', async () => {
        await users.put({ id: 'u1', email: 'a2@x', handle: 'ann' });
        await users.put({ id: 'u3', email: 'a@x', handle: 'cy' });
        expect(ids(await users.find({ where: { email: 'a@x' } }))).to.deep.equal(['u3']);
      });
    });

    describe('index maintenance', () => {
      it('given an indexed field that changes, when finding by the old value, then the document is gone from it', async () => {
        await tasks.put({ id: 't1', project: 'p1', state: 'new' });
        await tasks.put({ id: 't1', project: 'p2', state: 'done' });
        expect(await tasks.find({ where: { project: 'p1' } })).to.deep.equal([]);
        expect(await tasks.count({ project: 'p1', state: 'new' })).to.equal(0);
        expect(ids(await tasks.find({ where: { project: 'p2', state: 'done' } }))).to.deep.equal(['t1']);
      });

      it('given a collection asked for twice, when written through one, then the other sees the write', async () => {
        const again = store.collection<Task>('contract_tasks', TASK_INDEXES);
        await tasks.put({ id: 't1', project: 'p1', state: 'new' });
        expect(await again.get('t1')).to.deep.equal({ id: 't1', project: 'p1', state: 'new' });
        expect(ids(await again.find({ where: { project: 'p1' } }))).to.deep.equal(['t1']);
      });

      it('given stored documents, when an index is declared later, then finds through it see them', async () => {
        await tasks.put({ id: 't1', project: 'p1', state: 'new', title: 'x' });
        const withTitle = store.collection<Task>('contract_tasks', [{ fields: ['title'] }]);
        expect(ids(await withTitle.find({ where: { title: 'x' } }))).to.deep.equal(['t1']);
      });
    });

    describe('partial indexes', () => {
      type Item = Doc & { kind: string; project: string; state?: string | null; code?: string };
      const PARTIAL: ReadonlyArray<IndexSpec> = [
        { fields: ['project', 'state'], partial: { kind: 'task' } },
        { fields: ['code'], unique: true, partial: { kind: 'task' } },
      ];
      let items: Collection<Item>;
      beforeEach(() => {
        items = store.collection<Item>('contract_partial', PARTIAL);
      });

      it('given tasks and other documents, when finding with and without the partial value, then each find returns exactly its matches', async () => {
        await items.put({ id: 'a', kind: 'task', project: 'p', state: null, code: 'a' });
        await items.put({ id: 'b', kind: 'note', project: 'p', state: null });
        await items.put({ id: 'c', kind: 'task', project: 'p', state: 'done', code: 'c' });
        expect(ids(await items.find({ where: { kind: 'task', project: 'p', state: null } }))).to.deep.equal(['a']);
        expect(ids(await items.find({ where: { project: 'p', state: null } })).sort()).to.deep.equal(['a', 'b']);
        expect(ids(await items.find({ where: { kind: 'note', project: 'p', state: null } }))).to.deep.equal(['b']);
        expect(await items.count({ kind: 'task', project: 'p' })).to.equal(2);
      });

      it('given a document that becomes a task and stops being one, when finding tasks, then it appears and disappears', async () => {
        await items.put({ id: 'a', kind: 'note', project: 'p', state: 'new' });
        await items.put({ id: 'a', kind: 'task', project: 'p', state: 'new' });
        expect(ids(await items.find({ where: { kind: 'task', project: 'p', state: 'new' } }))).to.deep.equal(['a']);
        await items.put({ id: 'a', kind: 'note', project: 'p', state: 'new' });
        expect(await items.find({ where: { kind: 'task', project: 'p', state: 'new' } })).to.deep.equal([]);
        await items.delete('a');
        expect(await items.count({ project: 'p' })).to.equal(0);
      });

      it('given a unique partial index, when documents outside it share a value, then only the indexed ones must be unique', unlessLacking(options, 'partialUniqueIndexes', async () => {
        await items.put({ id: 'a', kind: 'note', project: 'p', code: 'x' });
        await items.put({ id: 'b', kind: 'note', project: 'p', code: 'x' });
        await items.put({ id: 'c', kind: 'task', project: 'p', code: 'x' });
        expect(await rejection(items.put({ id: 'd', kind: 'task', project: 'p', code: 'x' }))).to.be.instanceOf(UniqueIndexViolationError);
        expect(await rejection(items.put({ id: 'a', kind: 'task', project: 'p', code: 'x' }))).to.be.instanceOf(UniqueIndexViolationError);
        expect(ids(await items.find({ where: { code: 'x' } })).sort()).to.deep.equal(['a', 'b', 'c']);
        expect(ids(await items.find({ where: { kind: 'task', code: 'x' } }))).to.deep.equal(['c']);
      }));
    });

    describe('copies', () => {
      it('given a read document, when the caller mutates it, then the stored document is unchanged', async () => {
        await tasks.put({ id: 't1', project: 'p1', state: 'new', meta: { n: 1 } });
        const read = await tasks.get('t1');
        if (!read) throw new Error('t1 not found');
        read.state = 'hacked';
        (read.meta as { n: number }).n = 2;
        const [found] = await tasks.find({ where: { project: 'p1' } });
        const [sorted] = await tasks.find({ sort: { field: 'state', direction: 'asc' } });
        if (!found || !sorted) throw new Error('t1 not found');
        found.state = 'hacked';
        sorted.project = 'hacked';
        expect(await tasks.get('t1')).to.deep.equal({ id: 't1', project: 'p1', state: 'new', meta: { n: 1 } });
      });

      it('given a put document, when the caller mutates its object afterwards, then the stored one is unchanged', async () => {
        const doc: Task = { id: 't1', project: 'p1', state: 'new', meta: { n: 1 } };
        await tasks.put(doc);
        doc.project = 'p2';
        (doc.meta as { n: number }).n = 2;
        expect(await tasks.get('t1')).to.deep.equal({ id: 't1', project: 'p1', state: 'new', meta: { n: 1 } });
        expect(ids(await tasks.find({ where: { project: 'p1' } }))).to.deep.equal(['t1']);
      });
    });

    describeValueContract(() => store);
    describeRebuildContract(() => store);
    describeBatchContract(() => store);

    describe('clear', () => {
      it('given documents in several collections, when cleared, then every collection is empty and indexes still hold', async () => {
        const users = store.collection('contract_users', [{ fields: ['email'], unique: true }]);
        await tasks.put({ id: 't1', project: 'p1', state: 'new' });
        await users.put({ id: 'u1', email: 'a@x' });
        await store.clear();
        expect(await tasks.count()).to.equal(0);
        expect(await tasks.find({ where: { project: 'p1' } })).to.deep.equal([]);
        expect(await users.get('u1')).to.equal(null);
        await users.put({ id: 'u2', email: 'a@x' });
        expect(await rejection(users.put({ id: 'u3', email: 'a@x' }))).to.be.instanceOf(UniqueIndexViolationError);
      });
    });
  });
};
