import { expect } from 'chai';
import fc from 'fast-check';
import { canonicalJson } from './canonicalJson.ts';

/** Shuffles an object's members (a value's key order must not change its canonical text). */
const reordered = (value: unknown, seed: number): unknown => {
  if (Array.isArray(value)) return value.map((element) => reordered(element, seed));
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value);
  const rotated = entries.length === 0 ? entries : [...entries.slice(seed % entries.length), ...entries.slice(0, seed % entries.length)].reverse();
  return Object.fromEntries(rotated.map(([key, member]) => [key, reordered(member, seed + 1)]));
};

describe('canonicalJson (RFC 8785 JCS)', () => {
  it('given the example of RFC 8785 section 3.2.2, when canonicalized, then the text is the RFC\'s to the byte', () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
    ) as unknown;
    expect(canonicalJson(input)).to.equal('{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}');
  });

  it('given the member names of RFC 8785 section 3.2.3, when canonicalized, then they are sorted by UTF-16 code units', () => {
    const input = JSON.parse('{"\\u20ac": 1, "\\r": 2, "\\ufb33": 3, "1": 4, "\\ud83d\\ude00": 5, "\\u0080": 6, "\\u00f6": 7}') as unknown;
    expect(canonicalJson(input)).to.equal('{"\\r":2,"1":4,"\u0080":6,"\u00f6":7,"\u20ac":1,"\ud83d\ude00":5,"\ufb33":3}');
  });

  it('given the numbers of RFC 8785 appendix B, when canonicalized, then each is written as the RFC says', () => {
    const cases: Array<[number, string]> = [
      [0, '0'],
      [-0, '0'],
      [5e-324, '5e-324'],
      [-5e-324, '-5e-324'],
      [1.7976931348623157e308, '1.7976931348623157e+308'],
      [9007199254740992, '9007199254740992'],
      [-9007199254740992, '-9007199254740992'],
      [2 ** 68, '295147905179352830000'],
      [1e21, '1e+21'],
      [Number('999999999999999868928'), '999999999999999900000'],
      [0.000001, '0.000001'],
      [1e-7, '1e-7'],
      [333333333.3333333, '333333333.3333333'],
    ];
    for (const [number, text] of cases) expect(canonicalJson(number), String(number)).to.equal(text);
  });

  it('given values JSON has not, when canonicalized, then they are refused rather than written as something else', () => {
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, undefined, () => 1, Symbol('s')]) expect(() => canonicalJson(value)).to.throw(TypeError);
  });

  it('given a bigint position, when canonicalized, then it is its decimal digits, as the same number is', () => {
    expect(canonicalJson({ position: 12345678901234n })).to.equal(canonicalJson({ position: 12345678901234 }));
  });

  it('given any JSON value, when canonicalized, then the text parses back to the value, and canonicalizing that gives the same text', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        expect(JSON.parse(text)).to.deep.equal(JSON.parse(JSON.stringify(value)));
        expect(canonicalJson(JSON.parse(text))).to.equal(text);
      }),
      { numRuns: 1000 },
    );
  });

  it('given any JSON value with its members in another order, when canonicalized, then the text is the same', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(20), (value, seed) => {
        expect(canonicalJson(reordered(value, seed))).to.equal(canonicalJson(value));
      }),
      { numRuns: 1000 },
    );
  });

  // Names that are array indexes are left out: JavaScript lists them first whatever the insertion order.
  it('given an object whose members are already sorted, when canonicalized, then the text is JSON.stringify\'s', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string().filter((name) => !/^\d+$/.test(name)), fc.oneof(fc.string(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null))), (dictionary) => {
        const sorted = Object.fromEntries(Object.entries(dictionary).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
        expect(canonicalJson(sorted)).to.equal(JSON.stringify(sorted));
      }),
      { numRuns: 1000 },
    );
  });
});
