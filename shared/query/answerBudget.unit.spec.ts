import { expect } from 'chai';
import fc from 'fast-check';
import { AnswerBudget, cutMarker, cutTotalOf, cutValue, jsonBytes, jsonStringBytes } from './answerBudget.ts';

/** The body the route sends for an answer. */
const bodyBytes = (budget: AnswerBudget, columns: string[]): number => Buffer.byteLength(JSON.stringify(budget.answer(columns)), 'utf8');

describe('AnswerBudget (QUERY_MAX_BYTES and QUERY_MAX_ROWS on an answer)', () => {
  it('given strings of every kind, when measured, then jsonStringBytes is the UTF-8 length of JSON.stringify', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (text) => {
        expect(jsonStringBytes(text)).to.equal(Buffer.byteLength(JSON.stringify(text), 'utf8'));
      }),
      { numRuns: 2000 },
    );
    expect(jsonStringBytes('\ud800x')).to.equal(Buffer.byteLength(JSON.stringify('\ud800x'), 'utf8'));
  });

  it('given any JSON value, when measured without writing it, then jsonBytes is the UTF-8 length of JSON.stringify', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(jsonBytes(value)).to.equal(Buffer.byteLength(JSON.stringify(value), 'utf8'));
      }),
      { numRuns: 1000 },
    );
    expect(jsonBytes([1, undefined, { a: undefined, b: -0 }, Number.NaN, 'é'])).to.equal(Buffer.byteLength(JSON.stringify([1, undefined, { a: undefined, b: -0 }, Number.NaN, 'é'])));
  });

  it('given rows within both bounds, when offered, then all are taken and the answer is not truncated', () => {
    const budget = new AnswerBudget({ maxRows: 10, maxBytes: 1024 }, ['n']);
    for (let n = 0; n < 5; n += 1) expect(budget.offer([n, `row ${n}`])).to.equal(true);
    expect(budget.answer(['n'])).to.deep.equal({ columns: ['n'], rows: [0, 1, 2, 3, 4].map((n) => [n, `row ${n}`]), row_count: 5, truncated: false });
    expect(budget.stoppedBy).to.equal(null);
  });

  it('given more rows than maxRows, when offered, then rows stop at maxRows, truncated, stopped by rows', () => {
    const budget = new AnswerBudget({ maxRows: 3, maxBytes: 1024 });
    expect([1, 2, 3, 4].map((n) => budget.offer([n]))).to.deep.equal([true, true, true, false]);
    expect(budget.answer(['n'])).to.include({ row_count: 3, truncated: true });
    expect(budget.stoppedBy).to.equal('rows');
  });

  it('given rows whose JSON passes maxBytes, when offered, then rows stop before the one that would cross it and the body stays within the bound', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer(), fc.string({ maxLength: 300 })), { maxLength: 60 }), fc.integer({ min: 200, max: 3000 }), (rows, maxBytes) => {
        const budget = new AnswerBudget({ maxRows: 10_000, maxBytes }, ['id', 'text']);
        let taken = 0;
        for (const row of rows) {
          if (!budget.offer(row)) break;
          taken += 1;
        }
        expect(bodyBytes(budget, ['id', 'text'])).to.be.at.most(maxBytes);
        if (taken < rows.length) expect(budget.truncated).to.equal(true);
        if (taken > 0) expect(budget.rows.slice(0, taken)).to.deep.equal(rows.slice(0, taken));
      }),
      { numRuns: 300 },
    );
  });

  it('given a first row with a value larger than the bound, when offered, then that value is cut with the marker naming its size, the row returned, truncated', () => {
    const budget = new AnswerBudget({ maxRows: 10_000, maxBytes: 2048 }, ['id', 'big', 'after']);
    const big = 'é'.repeat(100_000);
    expect(budget.offer([7, big, 'tail'])).to.equal(false);
    const [row] = budget.rows as [unknown[]];
    expect(row[0]).to.equal(7);
    const cut = row[1] as string;
    expect(cut.endsWith(cutMarker(200_000))).to.equal(true);
    expect(cut.startsWith('éé')).to.equal(true);
    expect(row[2]).to.equal('tail');
    expect(budget.truncated).to.equal(true);
    expect(bodyBytes(budget, ['id', 'big', 'after'])).to.be.at.most(2048).and.above(1900);
  });

  it('given a first row of objects too large, when offered, then the object is cut as its JSON text; numbers alone that cannot fit give no row', () => {
    const budget = new AnswerBudget({ maxRows: 10, maxBytes: 1024 }, ['j']);
    expect(budget.offer([{ list: Array.from({ length: 1000 }, (_, n) => n) }])).to.equal(false);
    expect(budget.rows[0]?.[0]).to.be.a('string').and.match(/^\{"list":\[0,1,2,.*…\[value cut: \d+ bytes\]$/);
    const numbers = new AnswerBudget({ maxRows: 10, maxBytes: 1024 });
    expect(numbers.offer(Array.from({ length: 500 }, (_, n) => n))).to.equal(false);
    expect(numbers.answer([])).to.deep.equal({ columns: [], rows: [], row_count: 0, truncated: true });
  });

  it('given a value the wire already cut, when cut again, then the database size in its marker is kept', () => {
    const wire = `${'x'.repeat(5000)}${cutMarker(600_000_000)}`;
    expect(cutTotalOf(wire)).to.equal(600_000_000);
    const again = cutValue(wire, 200) as string;
    expect(cutTotalOf(again)).to.equal(600_000_000);
    expect(again.match(/…\[value cut/g)).to.have.length(1);
    expect(jsonStringBytes(again)).to.be.at.most(200);
    expect(cutValue('abc', 5)).to.equal(null);
  });

  it('given surrogate pairs at the cut, when cut, then a pair is kept or dropped whole', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', minLength: 20, maxLength: 60 }), fc.integer({ min: 40, max: 120 }), (text, bytes) => {
        const cut = cutValue(text, bytes);
        if (cut === null) return;
        expect(jsonStringBytes(cut)).to.be.at.most(bytes);
        expect(() => encodeURIComponent(cut)).to.not.throw();
      }),
      { numRuns: 500 },
    );
  });
});
