import { expect } from 'chai';
import { backoffDelay } from './backoffDelay.ts';

describe('backoffDelay', () => {
  it('given failed attempts, when computing the wait, then it doubles from the base and stops at the cap', () => {
    const settings = { baseMs: 100, maxMs: 5000 };
    expect([1, 2, 3, 4, 5, 6, 7, 50].map((attempt) => backoffDelay(settings, attempt))).to.deep.equal([
      100, 200, 400, 800, 1600, 3200, 5000, 5000,
    ]);
  });
});
