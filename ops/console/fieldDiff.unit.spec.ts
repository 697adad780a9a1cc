import { expect } from 'chai';
import { fieldDiff } from './app/src/catalog/fieldDiff.ts';

describe('console revision diff (fieldDiff)', () => {
  const v1 = { laui: 'r1', item_laui: 'i', version: 1, created_at: 't1', updated_by: 'u1', name: 'warehouse', max_parallelism: 2, content: { host: 'db', port: 5432 } };

  it('given two revisions of which one field changed, when diffed, then only that field shows with its value before and after', () => {
    const v2 = { ...v1, laui: 'r2', version: 2, created_at: 't2', updated_by: 'u2', max_parallelism: 3 };
    expect(fieldDiff(v1, v2)).to.deep.equal([{ field: 'max_parallelism', change: 'changed', before: 2, after: 3 }]);
  });

  it('given a field added and one removed, when diffed, then each shows as such, in field order', () => {
    const v2 = { ...v1, version: 2, description: 'the warehouse', content: undefined };
    expect(fieldDiff(v1, v2)).to.deep.equal([
      { field: 'content', change: 'removed', before: { host: 'db', port: 5432 } },
      { field: 'description', change: 'added', after: 'the warehouse' },
    ]);
  });

  it('given an object whose keys come in another order, or a field null on one side and absent on the other, when diffed, then nothing changed', () => {
    const v2 = { ...v1, version: 2, content: { port: 5432, host: 'db' }, description: null };
    expect(fieldDiff(v1, v2)).to.deep.equal([]);
  });

  it('given a nested change, when diffed, then the whole field shows before and after', () => {
    const v2 = { ...v1, version: 2, content: { host: 'db2', port: 5432 } };
    expect(fieldDiff(v1, v2)).to.deep.equal([{ field: 'content', change: 'changed', before: v1.content, after: v2.content }]);
  });

  it('given the first revision, when diffed against nothing, then every field but the revision header is added', () => {
    expect(fieldDiff(null, v1).map((change) => [change.field, change.change])).to.deep.equal([
      ['content', 'added'],
      ['max_parallelism', 'added'],
      ['name', 'added'],
    ]);
  });
});
