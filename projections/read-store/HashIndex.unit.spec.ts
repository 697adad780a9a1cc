import { expect } from 'chai';
import { HashIndex, type Where } from './HashIndex.ts';

describe('HashIndex', () => {
  describe('partial', () => {
    const index = (): HashIndex => new HashIndex('items', { fields: ['project', 'state'], partial: { kind: 'task' } });

    it('given a where without the partial value, when asked whether it covers it, then it does not', () => {
      const tasks = index();
      expect(tasks.covers({ project: 'p', state: null })).to.equal(false);
      expect(tasks.covers({ project: 'p', state: null, kind: 'note' })).to.equal(false);
      expect(tasks.covers({ project: 'p', state: null, kind: 'task' })).to.equal(true);
    });

    it('given documents in and outside it, when looked up, then only the documents holding the partial value are in the bucket', () => {
      const tasks = index();
      tasks.add({ id: 'a', kind: 'task', project: 'p' });
      tasks.add({ id: 'b', kind: 'note', project: 'p' });
      expect([...tasks.lookup({ kind: 'task', project: 'p', state: null }).ids]).to.deep.equal(['a']);
    });

    it('given a document entering and leaving the index through updates, when looked up, then the bucket follows it', () => {
      const tasks = index();
      const note = { id: 'a', kind: 'note', project: 'p', state: 'new' };
      const task = { ...note, kind: 'task' };
      tasks.add(note);
      tasks.replace(note, task);
      expect([...tasks.lookup({ kind: 'task', project: 'p', state: 'new' }).ids]).to.deep.equal(['a']);
      tasks.replace(task, note);
      expect(tasks.lookup({ kind: 'task', project: 'p', state: 'new' }).size).to.equal(0);
      tasks.remove(note);
      expect(tasks.lookup({ kind: 'task', project: 'p', state: 'new' }).size).to.equal(0);
    });
  });

  describe('keys', () => {
    it('given absent, null and boolean values, when looked up by their JSON equals, then the same buckets answer', () => {
      const flags = new HashIndex('items', { fields: ['flag'] });
      flags.add({ id: 'a' });
      flags.add({ id: 'b', flag: null });
      flags.add({ id: 'c', flag: false });
      flags.add({ id: 'd', flag: true });
      flags.add({ id: 'e', flag: 'false' });
      expect([...flags.lookup({ flag: null }).ids].sort()).to.deep.equal(['a', 'b']);
      expect([...flags.lookup({ flag: false }).ids]).to.deep.equal(['c']);
      expect([...flags.lookup({ flag: true }).ids]).to.deep.equal(['d']);
      expect([...flags.lookup({ flag: 'false' }).ids]).to.deep.equal(['e']);
    });
  });

  describe('values as keys', () => {
    it('given a string, a number and an object of the same text, when looked up, then each has its own bucket', () => {
      const values = new HashIndex('docs', { fields: ['value'] });
      values.add({ id: 'a', value: '1' });
      values.add({ id: 'b', value: 1 });
      values.add({ id: 'c', value: { n: 1 } });
      values.add({ id: 'd', value: '{"n":1}' });
      expect([...values.lookup({ value: '1' }).ids]).to.deep.equal(['a']);
      expect([...values.lookup({ value: 1 }).ids]).to.deep.equal(['b']);
      // The port's equalities are primitives; a document's object value is still indexed apart.
      expect([...values.lookup({ value: { n: 1 } } as unknown as Where).ids]).to.deep.equal(['c']);
      expect([...values.lookup({ value: '{"n":1}' }).ids]).to.deep.equal(['d']);
    });

    it('given a compound index, when documents leave a first value, then its level is dropped and lookups find nothing there', () => {
      const pairs = new HashIndex('docs', { fields: ['parent', 'child'] });
      const one = { id: 'a', parent: 'p', child: 'c1' };
      const two = { id: 'b', parent: 'p', child: 'c1' };
      pairs.add(one);
      pairs.add(two);
      expect(pairs.lookup({ parent: 'p', child: 'c1' }).size).to.equal(2);
      pairs.replace(one, { ...one, parent: 'q' });
      pairs.remove(two);
      expect(pairs.lookup({ parent: 'p', child: 'c1' }).size).to.equal(0);
      expect([...pairs.lookup({ parent: 'q', child: 'c1' }).ids]).to.deep.equal(['a']);
      expect((pairs as unknown as { root: { size: number } }).root.size, 'the emptied level of "p" is gone').to.equal(1);
    });

    it('given duplicates of a compound key, when made unique, then the error names the values', () => {
      const pairs = new HashIndex('docs', { fields: ['parent', 'child'] });
      pairs.add({ id: 'a', parent: 'p', child: 'c' });
      pairs.add({ id: 'b', parent: 'p', child: 'c' });
      expect(() => pairs.assertNoDuplicates()).to.throw(/\["p","c"\]/);
    });
  });
});
