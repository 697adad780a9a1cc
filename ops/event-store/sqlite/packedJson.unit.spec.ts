import { expect } from 'chai';
import { PACKED_DICTIONARY, packJson, unpackJson } from './packedJson.ts';

const BASE = Date.parse('2026-11-29T01:14:17.971Z');
const roundTrip = (value: unknown, base = BASE): unknown => unpackJson(packJson(value, base), base);

describe('packedJson: the compact encoding of the log table', () => {
  it('given values of every JSON kind, when packed and unpacked, then JSON.stringify of the result is that of the value (key order kept)', () => {
    const values: unknown[] = [
      null,
      true,
      0,
      -1,
      2 ** 53 - 1,
      -(2 ** 53 - 1),
      1.25,
      -1e-300,
      '',
      'é 😀 "quoted"',
      [],
      {},
      { b: 1, a: [1, 'x', null, { c: false }], 10: 'integer keys first, as JSON.parse orders them' },
    ];
    for (const value of values) expect(JSON.stringify(roundTrip(value)), JSON.stringify(value)).to.equal(JSON.stringify(value));
  });

  it('given what JSON.stringify would drop or change (undefined, NaN), when packed, then it reads back as JSON would', () => {
    expect(roundTrip({ a: undefined, b: NaN, c: [undefined, Infinity] })).to.deep.equal({ b: null, c: [null, null] });
  });

  it('given ids, times and repeated strings, when packed, then each takes its short form and reads back exactly', () => {
    const laui = '6b0b7c69086ee14a829af6d6';
    const uuid = '30eb7d27-0a79-4da1-bda7-0a69215e45ba';
    const value = { laui, uuid, copy: uuid, at: '2026-11-29T01:14:17.981Z', before: '2026-11-29T01:14:17.000Z', state: 'running' };
    const packed = packJson(value, BASE);
    expect(unpackJson(packed, BASE)).to.deep.equal(value);
    // object 2 + 6 keys (two characters each as words, or short strings) + 17 + 23 + 2 (reference) + 3 + 4 + 2.
    expect(Buffer.byteLength(packed)).to.be.below(JSON.stringify(value).length / 2);
  });

  it('given strings that only look like ids or times (upper case, a bad date, another precision), when packed, then they read back as written', () => {
    const value = ['6B0B7C69086EE14A829AF6D6', '30EB7D27-0A79-4DA1-BDA7-0A69215E45BA', '2026-13-29T01:14:17.971Z', '2026-02-30T00:00:00.000Z', '2026-11-29T01:14:17Z', '+012026-11-29T01:14:17.971Z'];
    expect(roundTrip(value)).to.deep.equal(value);
  });

  it('given a key named __proto__, when unpacked, then it is an own property and the prototype is untouched', () => {
    const value = JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    const back = roundTrip(value) as Record<string, unknown>;
    expect(Object.getPrototypeOf(back)).to.equal(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(back, '__proto__')?.value).to.deep.equal({ polluted: true });
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
  });

  it('given strings UTF-8 cannot hold (a lone surrogate), when packed, then every character the text holds is UTF-8 safe and they read back as written', () => {
    const value = ['\ud800', 'a\udc00b', '😀 paired', 'é'];
    const packed = packJson(value, BASE);
    expect(Buffer.from(packed, 'utf8').toString('utf8')).to.equal(packed);
    expect(unpackJson(packed, BASE)).to.deep.equal(value);
  });

  it('given text cut short or with characters left over, when unpacked, then it throws rather than return a wrong value', () => {
    const packed = packJson({ name: 'a string long enough', id: '6b0b7c69086ee14a829af6d6' }, BASE);
    expect(() => unpackJson(packed.slice(0, packed.length - 3), BASE)).to.throw(/truncated/);
    expect(() => unpackJson(`${packed}\u0000`, BASE)).to.throw(/left over/);
  });

  it('given the dictionary, then it has no entry twice (an index must name one word)', () => {
    expect(new Set(PACKED_DICTIONARY).size).to.equal(PACKED_DICTIONARY.length);
  });
});
