import { expect } from 'chai';
import { isLaui, newLaui } from './ids.ts';

describe('LAUI ids', () => {
  it('given two ids made in the same second, when compared, then both are valid and distinct', () => {
    const at = new Date('2026-01-01T00:00:00Z');
    const a = newLaui(at);
    const b = newLaui(at);
    expect(isLaui(a)).to.equal(true);
    expect(a).to.not.equal(b);
    expect(a.slice(0, 8)).to.equal((Date.parse('2026-01-01T00:00:00Z') / 1000).toString(16));
  });

  it('given malformed strings, when checked, then they are rejected', () => {
    for (const bad of ['', 'xyz', '0123456789abcdef0123456', '0123456789ABCDEF01234567', 42, null]) {
      expect(isLaui(bad)).to.equal(false);
    }
  });
});
