import { expect } from 'chai';
import { globPrefix, globRegExp, hasGlob } from './objectGlob.ts';

describe('Globs over object keys (DuckDB syntax)', () => {
  it('given patterns, when matched against keys, then * stays within a folder, ** crosses folders, ? and [] match one character', () => {
    const match = (pattern: string, key: string) => globRegExp(pattern).test(key);
    expect(match('sales/*.parquet', 'sales/a.parquet')).to.equal(true);
    expect(match('sales/*.parquet', 'sales/2024/a.parquet')).to.equal(false);
    expect(match('sales/**/*.parquet', 'sales/a.parquet')).to.equal(true);
    expect(match('sales/**/*.parquet', 'sales/y=1/m=2/a.parquet')).to.equal(true);
    expect(match('sales/**', 'sales/x/y')).to.equal(true);
    expect(match('part-?.csv', 'part-1.csv')).to.equal(true);
    expect(match('part-?.csv', 'part-12.csv')).to.equal(false);
    expect(match('part-[0-4].csv', 'part-3.csv')).to.equal(true);
    expect(match('part-[!0-4].csv', 'part-7.csv')).to.equal(true);
    expect(match('part-[!0-4].csv', 'part-3.csv')).to.equal(false);
    expect(match('a.b(c)+.csv', 'a.b(c)+.csv')).to.equal(true);
    expect(match('a.b.csv', 'aXb.csv')).to.equal(false);
  });

  it('given patterns, when listed, then the prefix before the first wildcard is listed', () => {
    expect(globPrefix('sales/year=2024/*.parquet')).to.equal('sales/year=2024/');
    expect(globPrefix('**/x')).to.equal('');
    expect(hasGlob('a/b.csv')).to.equal(false);
    expect(hasGlob('a/[ab].csv')).to.equal(true);
  });
});
