import { expect } from 'chai';
import fc from 'fast-check';
import { replaceLiterals, sqlStringLiteral, urlLiterals } from './objectUrlLiterals.ts';

const urls = (sql: string) => urlLiterals(sql).map((literal) => literal.url);

describe('Object URL literals in a statement (what the embedded engine fetches)', () => {
  it('given the reading functions, when scanned, then their first argument, one literal or a list', () => {
    expect(urls("SELECT * FROM read_parquet('s3://b/x.parquet')")).to.deep.equal(['s3://b/x.parquet']);
    expect(urls("SELECT * FROM READ_CSV('s3://b/*.csv', header = true)")).to.deep.equal(['s3://b/*.csv']);
    expect(urls("SELECT * FROM read_json_auto(['gs://b/a.json', 'gs://b/b.json'], format = 'array')")).to.deep.equal(['gs://b/a.json', 'gs://b/b.json']);
    expect(urls(`SELECT * FROM "read_parquet"('az://c/p')`)).to.deep.equal(['az://c/p']);
  });

  it('given a literal right after FROM, JOIN, DESCRIBE or SUMMARIZE, when scanned, then it is taken', () => {
    expect(urls("SELECT * FROM 's3://b/x.parquet' AS t JOIN 's3://b/y.parquet' u USING (id)")).to.deep.equal(['s3://b/x.parquet', 's3://b/y.parquet']);
    expect(urls("DESCRIBE 's3://b/x.csv'")).to.deep.equal(['s3://b/x.csv']);
    expect(urls("SUMMARIZE 's3://b/x.csv'")).to.deep.equal(['s3://b/x.csv']);
    expect(urls("FROM 's3://b/x.csv'")).to.deep.equal(['s3://b/x.csv']);
    expect(urls("SELECT * FROM (FROM 's3://b/x.csv')")).to.deep.equal(['s3://b/x.csv']);
    expect(urls("SELECT * FROM (SELECT * FROM 's3://b/x.csv')")).to.deep.equal(['s3://b/x.csv']);
  });

  it('given URLs used as values, in comments, identifiers or other literal kinds, when scanned, then none is taken', () => {
    expect(urls("SELECT 's3://b/x' AS u")).to.deep.equal([]);
    expect(urls("SELECT * FROM t WHERE u IS DISTINCT FROM 's3://b/x'")).to.deep.equal([]);
    expect(urls("SELECT trim(both 'x' FROM 's3://b/x'), extract(year FROM ts) FROM t")).to.deep.equal([]);
    expect(urls("-- read_parquet('s3://b/x')\nSELECT 1")).to.deep.equal([]);
    expect(urls("/* outer /* nested */ read_parquet('s3://b/x') */ SELECT 1")).to.deep.equal([]);
    expect(urls(`SELECT "read_parquet('s3://b/x')" FROM t`)).to.deep.equal([]);
    expect(urls("SELECT * FROM read_parquet($$s3://b/x$$)")).to.deep.equal([]);
    expect(urls("SELECT * FROM read_parquet(E's3://b/x')")).to.deep.equal([]);
    expect(urls("SELECT * FROM read_parquet('s3://b/' || 'x')")).to.deep.equal([]);
    expect(urls("SELECT * FROM my.read_parquet('s3://b/x')")).to.deep.equal([]);
    expect(urls("SELECT * FROM read_parquet('/local/file.parquet')")).to.deep.equal([]);
  });

  it('given quotes inside literals and escape strings, when scanned, then the tokens stay in step', () => {
    expect(urls("SELECT 'it''s', E'a\\' read_parquet(''s3://b/no'')', * FROM read_parquet('s3://b/it''s.parquet')")).to.deep.equal(["s3://b/it's.parquet"]);
    expect(urls("SELECT $tag$ ' $tag$, * FROM read_csv('s3://b/x.csv')")).to.deep.equal(['s3://b/x.csv']);
  });

  it('given replacements, when applied, then each literal is rewritten as a literal and the rest untouched', () => {
    const sql = "SELECT * FROM read_parquet('s3://b/x') JOIN 's3://b/y' USING (id)";
    const found = urlLiterals(sql);
    const rewritten = replaceLiterals(sql, found.map((literal, index) => ({ literal, text: index === 0 ? "/tmp/q/b0/x" : "/tmp/q/it's" })));
    expect(rewritten).to.equal("SELECT * FROM read_parquet('/tmp/q/b0/x') JOIN '/tmp/q/it''s' USING (id)");
  });

  it('given any key text (quotes, comment marks, dollars, backslashes), when written as a literal, then it is found whole and rewritten whole', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('a', "'", '"', '-', '/', '*', '$', '\\', ' ', '\n', '(', ')', ',', '[', ']') }), (key) => {
        const url = `s3://bucket/${key}`;
        const sql = `SELECT * FROM read_csv(${sqlStringLiteral(url)}) WHERE x = 'after'`;
        const found = urlLiterals(sql);
        expect(found.map((literal) => literal.url)).to.deep.equal([url]);
        expect(replaceLiterals(sql, [{ literal: found[0]!, text: '/tmp/copy' }])).to.equal("SELECT * FROM read_csv('/tmp/copy') WHERE x = 'after'");
      }),
    );
  });
});
