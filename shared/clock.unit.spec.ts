import { expect } from 'chai';
import { isoTime } from './clock.ts';

describe('isoTime', () => {
  it('given times in and across milliseconds, when formatted, then each is exactly its toISOString', () => {
    // Given: repeats of one millisecond, then later ones, then an earlier one again
    const times = [0, 0, 1, 1, 999, 1_000, 1_764_000_000_123, 1_764_000_000_123, 1_764_000_000_124, 5].map((ms) => new Date(ms));

    // When
    const formatted = times.map(isoTime);

    // Then
    expect(formatted).to.deep.equal(times.map((date) => date.toISOString()));
  });

  it('given an invalid date, when formatted, then it throws as toISOString does', () => {
    expect(() => isoTime(new Date(Number.NaN))).to.throw(RangeError);
  });
});
