import { expect } from 'chai';
import { AppError, RetryLaterError } from '../errors.ts';
import { StreamShares, streamHolderOf, type StreamHolder } from './StreamShares.ts';
import type { AppState } from './AppState.ts';

/** The status of admitting `holder`: 200 (and the release kept in `held`), or the refusal's status. */
const tryAdmit = (shares: StreamShares, holder: StreamHolder, held: Array<() => void>): number => {
  try {
    held.push(shares.admit(holder));
    return 200;
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return error.status;
  }
};

describe('StreamShares (streams shared out per client)', () => {
  const settings = { total: 10, perUser: 3, anonymous: { perAddress: 2, total: 6 } };

  it('given one anonymous address, when it opens more than its share, then 429 Too many open <what> with Retry-After, and other addresses still get theirs', () => {
    const shares = new StreamShares(settings, 'log streams');
    const held: Array<() => void> = [];
    const statuses = [1, 2, 3].map(() => tryAdmit(shares, { address: '203.0.113.7' }, held));
    expect(statuses).to.deep.equal([200, 200, 429]);
    try {
      shares.admit({ address: '203.0.113.7' });
      expect.fail('admitted past its share');
    } catch (error) {
      expect(error).to.be.instanceOf(RetryLaterError);
      expect(error).to.deep.include({ status: 429, detail: 'Too many open log streams' });
      expect((error as RetryLaterError).retryAfterSeconds).to.be.greaterThan(0);
    }
    expect(tryAdmit(shares, { address: '198.51.100.1' }, held)).to.equal(200);
  });

  it('given anonymous clients holding the anonymous part, when another address or a user comes, then the address gets 503 and the user its streams', () => {
    const shares = new StreamShares(settings, 'log streams');
    const held: Array<() => void> = [];
    for (const address of ['10.0.0.1', '10.0.0.2', '10.0.0.3']) for (const _ of [1, 2]) expect(tryAdmit(shares, { address }, held)).to.equal(200);
    expect(tryAdmit(shares, { address: '10.0.0.4' }, held)).to.equal(503);
    expect([1, 2, 3].map(() => tryAdmit(shares, { user: 'ada' }, held))).to.deep.equal([200, 200, 200]);
    expect(tryAdmit(shares, { user: 'ada' }, held)).to.equal(429);
    // 6 anonymous + 3 of ada's: one slot left of 10, then the server is full for everyone.
    expect(tryAdmit(shares, { user: 'bob' }, held)).to.equal(200);
    expect(tryAdmit(shares, { user: 'carl' }, held)).to.equal(503);
    expect(shares.size).to.equal(10);
  });

  it('given a stream released (twice: the release is idempotent), then its holder and the server have the slot back, once', () => {
    const shares = new StreamShares({ total: 2, perUser: 2 }, 'event streams');
    const held: Array<() => void> = [];
    expect([1, 2, 3].map(() => tryAdmit(shares, { user: 'ada' }, held))).to.deep.equal([200, 200, 429]);
    held[0]?.();
    held[0]?.();
    expect(shares.size).to.equal(1);
    expect(tryAdmit(shares, { user: 'ada' }, held)).to.equal(200);
    expect(tryAdmit(shares, { user: 'ada' }, held)).to.equal(429);
  });

  it('given no anonymous share (the event stream), when an anonymous holder comes, then it is refused', () => {
    const shares = new StreamShares({ total: 2, perUser: 2 }, 'event streams');
    expect(tryAdmit(shares, { address: '10.0.0.1' }, [])).to.equal(429);
  });

  it('given requests, then a signed-in caller is held by its user and an anonymous one by its address (IPv6 by its /64)', () => {
    const state = (principal?: AppState['principal']): AppState => ({ correlationId: 'c', ...(principal ? { principal } : {}) });
    expect(streamHolderOf({ state: state(), ip: '2001:db8:1:2:aaaa::1' })).to.deep.equal({ address: '2001:db8:1:2::/64' });
    expect(streamHolderOf({ state: state(), ip: '2001:db8:1:2:bbbb::9' })).to.deep.equal({ address: '2001:db8:1:2::/64' });
    expect(streamHolderOf({ state: state(), ip: '::ffff:192.0.2.1' })).to.deep.equal({ address: '192.0.2.1' });
    const principal = { laui: '65a0000000000000000000aa', username: 'ada', isAdmin: false } as AppState['principal'];
    expect(streamHolderOf({ state: state(principal), ip: '192.0.2.1' })).to.deep.equal({ user: '65a0000000000000000000aa' });
  });
});
