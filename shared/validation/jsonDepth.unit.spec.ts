import { expect } from 'chai';
import { clampDepth, exceedsDepth, JSON_MAX_DEPTH, TOO_DEEP } from './jsonDepth.ts';

const nested = (depth: number): unknown => JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`);

describe('jsonDepth', () => {
  it('given values of known depth, when measured against a bound, then only deeper ones exceed it', () => {
    expect(exceedsDepth(1, 0)).to.equal(false);
    expect(exceedsDepth('x', 0)).to.equal(false);
    expect(exceedsDepth({}, 0)).to.equal(true);
    expect(exceedsDepth({}, 1)).to.equal(false);
    expect(exceedsDepth({ a: [1] }, 2)).to.equal(false);
    expect(exceedsDepth({ a: [1] }, 1)).to.equal(true);
    expect(exceedsDepth(nested(JSON_MAX_DEPTH))).to.equal(false);
    expect(exceedsDepth(nested(JSON_MAX_DEPTH + 1))).to.equal(true);
  });

  it('given a value nested 500,000 deep, when measured or clamped, then no stack overflow', () => {
    const deep = nested(500_000);
    expect(exceedsDepth(deep)).to.equal(true);
    const clamped = clampDepth(deep);
    expect(() => JSON.stringify(clamped)).not.to.throw();
    expect(JSON.stringify(clamped)).to.equal(`${'['.repeat(JSON_MAX_DEPTH)}${JSON.stringify(TOO_DEEP)}${']'.repeat(JSON_MAX_DEPTH)}`);
  });

  it('given a value within the bound, when clamped, then the very same value comes back (no copy)', () => {
    const value = { a: { b: [1, 2, { c: 'd' }] } };
    expect(clampDepth(value)).to.equal(value);
  });

  it('given a deep value with a __proto__ own key, when clamped, then the key stays data and no prototype changes', () => {
    const value = JSON.parse(`{"__proto__": {"polluted": true}, "x": ${JSON.stringify(nested(5))}}`) as Record<string, unknown>;
    const clamped = clampDepth(value, 3) as Record<string, unknown>;
    expect(Object.getPrototypeOf(clamped)).to.equal(Object.prototype);
    expect(Object.hasOwn(clamped, '__proto__')).to.equal(true);
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
    expect(JSON.stringify(clamped.x)).to.equal(`[[${JSON.stringify(TOO_DEEP)}]]`);
  });
});
