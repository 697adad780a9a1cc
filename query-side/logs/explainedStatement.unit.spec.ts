import { expect } from 'chai';
import { explainedStatement } from './explainedStatement.ts';

describe('explainedStatement (the statement an EXPLAIN wraps)', () => {
  it('given each form of EXPLAIN, when scanned, then the text after its prefix is returned', () => {
    expect(explainedStatement('EXPLAIN SELECT 1')).to.equal('SELECT 1');
    expect(explainedStatement('explain analyze select 1')).to.equal('select 1');
    expect(explainedStatement('EXPLAIN ANALYSE VERBOSE SELECT 1')).to.equal('SELECT 1');
    expect(explainedStatement('EXPLAIN VERBOSE SELECT 1')).to.equal('SELECT 1');
    expect(explainedStatement("EXPLAIN (FORMAT 'js)on', ANALYZE) SELECT 1")).to.equal('SELECT 1');
    expect(explainedStatement("EXPLAIN (FORMAT 'it''s') SELECT 1")).to.equal('SELECT 1');
  });

  it('given comments around the prefix, when scanned, then they are skipped like whitespace', () => {
    expect(explainedStatement('/* a /* nested */ one */ EXPLAIN -- why\n ANALYZE /**/ COPY x TO y')).to.equal('COPY x TO y');
  });

  it('given text that is not an EXPLAIN prefix, when scanned, then null (the caller refuses the query)', () => {
    expect(explainedStatement('SELECT 1')).to.equal(null);
    expect(explainedStatement('EXPLAINX SELECT 1')).to.equal(null);
    expect(explainedStatement('/* unterminated EXPLAIN SELECT 1')).to.equal(null);
    expect(explainedStatement("EXPLAIN (FORMAT 'json) SELECT 1")).to.equal(null);
    expect(explainedStatement('EXPLAIN (ANALYZE SELECT 1')).to.equal(null);
  });
});
