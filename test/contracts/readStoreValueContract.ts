import { expect } from 'chai';
import type { Doc, ReadStore } from '../../shared/read-store/ReadStore.ts';
import { UniqueIndexViolationError } from '../../projections/read-store/UniqueIndexViolationError.ts';

const ids = (docs: ReadonlyArray<Doc>): string[] => docs.map((doc) => doc.id);

const settle = (run: () => Promise<unknown>): Promise<{ value?: unknown; error?: unknown }> =>
  run().then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

/**
 * What the values and names inside documents mean to a store: keys a store might read as syntax,
 * whole-value equality, typed ranges, the order of mixed types. Part of describeReadStoreContract.
 */
export const describeValueContract = (storeOf: () => ReadStore): void => {
  describe('field names and values', () => {
    it('given keys with dots, a leading $, %, NUL and a top-level _id, when put and read, then the document comes back as it was and is found by them', async () => {
      const docs = storeOf().collection('contract_keys');
      const odd: Doc = {
        id: 'k1',
        'a.b': 1,
        $where: 'x',
        '%2E': 'percent',
        _id: 'not the id',
        'nul\u0000': true,
        nested: { 'c.d': { $gt: 1 }, list: [{ $x: 1, 'e.f': [1] }], ['__proto__']: { polluted: true } },
      };
      await docs.put(odd);
      await docs.put({ id: 'k2', 'a.b': 2, $where: 'y' });
      expect(await docs.get('k1')).to.deep.equal(odd);
      expect(ids(await docs.find({ where: { 'a.b': 1 } }))).to.deep.equal(['k1']);
      expect(ids(await docs.find({ where: { $where: 'y' } }))).to.deep.equal(['k2']);
      expect(ids(await docs.find({ where: { _id: 'not the id' } }))).to.deep.equal(['k1']);
      expect(ids(await docs.find({ sort: { field: 'a.b', direction: 'desc' } }))).to.deep.equal(['k2', 'k1']);
      expect(ids(await docs.find({ range: { field: 'a.b', gte: 2 } }))).to.deep.equal(['k2']);
      expect(await docs.count({ '%2E': 'percent' })).to.equal(1);
      const [found] = await docs.find({ where: { id: 'k1' } });
      expect(found).to.deep.equal(odd);
    });

    it('given a field holding an array, when finding by one of its elements or by null, then it does not match: values compare whole', async () => {
      const docs = storeOf().collection('contract_arrays', [{ fields: ['tag'] }]);
      await docs.put({ id: 'a', tag: ['x', 'y'] });
      await docs.put({ id: 'b', tag: 'x' });
      await docs.put({ id: 'c', tag: [null] });
      expect(ids(await docs.find({ where: { tag: 'x' } }))).to.deep.equal(['b']);
      expect(await docs.count({ tag: 'y' })).to.equal(0);
      expect(await docs.find({ where: { tag: null } })).to.deep.equal([]);
      expect(await docs.find({ range: { field: 'tag', gte: 'a' } })).to.have.length(1);
    });

    it('given a where value that is an object (an operator a caller slipped in), when finding, then no document matches or the find is refused', async () => {
      const docs = storeOf().collection('contract_hostile');
      await docs.put({ id: 'a', state: 'new' });
      const where = { state: { $ne: 'nothing' } } as unknown as Record<string, string>;
      const outcome = await settle(() => docs.find({ where }));
      if (outcome.error === undefined) expect(outcome.value).to.deep.equal([]);
      else expect(outcome.error).to.be.instanceOf(TypeError);
    });

    it('given values of several types, when finding a range, then only values of the bounds type within them match', async () => {
      const docs = storeOf().collection('contract_ranges');
      const values: Array<[string, unknown]> = [['n1', 1], ['n5', 5], ['n9', 9], ['s3', '3'], ['sb', 'b'], ['t', true], ['z', null], ['arr', [2]], ['obj', { n: 2 }]];
      for (const [id, n] of values) await docs.put({ id, n });
      await docs.put({ id: 'missing' });
      const found = async (gte?: string | number, lte?: string | number) =>
        ids(await docs.find({ range: { field: 'n', ...(gte === undefined ? {} : { gte }), ...(lte === undefined ? {} : { lte }) } })).sort();
      expect(await found(1, 5)).to.deep.equal(['n1', 'n5']);
      expect(await found(2)).to.deep.equal(['n5', 'n9']);
      expect(await found('a')).to.deep.equal(['sb']);
      expect(await found(undefined, 'z')).to.deep.equal(['s3', 'sb']);
      expect(await found()).to.deep.equal(['n1', 'n5', 'n9', 's3', 'sb']);
      expect(await found(1, 'z')).to.deep.equal([]);
      const withWhere = await docs.find({ where: { n: 5 }, range: { field: 'n', lte: 9 } });
      expect(ids(withWhere)).to.deep.equal(['n5']);
    });

    it('given numbers, strings, booleans and nulls in a sort field, when sorting both ways, then numbers < strings < booleans, nulls and missing last', async () => {
      const docs = storeOf().collection('contract_mixed');
      const values: Array<[string, unknown]> = [['n1', 2], ['s1', 'a'], ['b1', true], ['n2', -1], ['s2', 'B'], ['z', null], ['b2', false]];
      for (const [id, v] of values) await docs.put({ id, v });
      await docs.put({ id: 'm' });
      expect(ids(await docs.find({ sort: { field: 'v', direction: 'asc' } }))).to.deep.equal(['n2', 'n1', 's2', 's1', 'b2', 'b1', 'm', 'z']);
      expect(ids(await docs.find({ sort: { field: 'v', direction: 'desc' } }))).to.deep.equal(['b1', 'b2', 's1', 's2', 'n1', 'n2', 'm', 'z']);
      expect(ids(await docs.find({ sort: { field: 'id', direction: 'desc' }, limit: 3 }))).to.deep.equal(['z', 's2', 's1']);
    });

    it('given limit 0, or a negative or fractional limit or skip, when finding, then no document comes back or a RangeError names it', async () => {
      const docs = storeOf().collection('contract_limits');
      await docs.put({ id: 'a', v: 1 });
      expect(await docs.find({ limit: 0 })).to.deep.equal([]);
      expect(await docs.find({ limit: 0, sort: { field: 'v', direction: 'asc' } })).to.deep.equal([]);
      for (const options of [{ limit: -1 }, { skip: 1.5 }]) {
        const { error } = await settle(() => docs.find(options));
        expect(error).to.be.instanceOf(RangeError);
        expect(String(error)).to.match(/limit|skip/);
      }
    });

    it('given duplicate values, when a unique index is declared over them, then using it is refused with UniqueIndexViolationError and the collection keeps working', async () => {
      const store = storeOf();
      const users = store.collection('contract_late_unique', [{ fields: ['email'] }]);
      await users.put({ id: 'u1', email: 'a@x' });
      await users.put({ id: 'u2', email: 'a@x' });
      const { error } = await settle(async () => store.collection('contract_late_unique', [{ fields: ['email'], unique: true }]).count());
      expect(error).to.be.instanceOf(UniqueIndexViolationError);
      expect(error).to.include({ collection: 'contract_late_unique' });
      await users.put({ id: 'u3', email: 'a@x' });
      expect(await users.count({ email: 'a@x' })).to.equal(3);
    });
  });
};
