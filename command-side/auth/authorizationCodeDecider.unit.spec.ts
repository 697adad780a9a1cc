import { expect } from 'chai';
import { deciderSpecification } from '../../test/support/deciderSpecification.ts';
import type { AuthorizationCodeEvent } from '../../shared/domain-events/authEvents.ts';
import { authorizationCodeDecider, INVALID_CODE } from './authorizationCodeDecider.ts';

const given = deciderSpecification(authorizationCodeDecider);
const USER = '65a000000000000000000001';
const SID = 'cd'.repeat(16);
const EXPIRES = '2026-01-01T00:10:00.000Z';
const issued: AuthorizationCodeEvent = { type: 'AuthorizationCodeIssued', data: { user_laui: USER, client_id: 'console', expires_at: EXPIRES, session_id: SID } };
const redeemed = (at: string): AuthorizationCodeEvent => ({ type: 'AuthorizationCodeRedeemed', data: { at } });

describe('authorization code decider', () => {
  it('given no code, when issued, then AuthorizationCodeIssued carries the user, client, expiry and session', () => {
    given().when({ kind: 'issue', userLaui: USER, clientId: 'console', expiresAt: EXPIRES, sessionId: SID }).then([issued]);
  });

  it('given an issued or redeemed code, when issued again (a hash collision), then 409 Authorization code collision', () => {
    const issue = { kind: 'issue', userLaui: USER, clientId: 'other', expiresAt: EXPIRES, sessionId: SID } as const;
    given(issued).when(issue).thenFails(409, 'Authorization code collision');
    given(issued, redeemed('2026-01-01T00:01:00.000Z')).when(issue).thenFails(409, 'Authorization code collision');
  });

  it('given an issued code, when redeemed before or at its expiry, then AuthorizationCodeRedeemed', () => {
    given(issued).when({ kind: 'redeem', at: '2026-01-01T00:01:00.000Z' }).then([redeemed('2026-01-01T00:01:00.000Z')]);
    given(issued).when({ kind: 'redeem', at: EXPIRES }).then([redeemed(EXPIRES)]);
  });

  it('given an issued code, when redeemed after its expiry, then 401 Invalid authorization code', () => {
    given(issued).when({ kind: 'redeem', at: '2026-01-01T00:10:00.001Z' }).thenFails(401, INVALID_CODE);
  });

  it('given no code or a redeemed one, when redeemed, then 401 Invalid authorization code (single use)', () => {
    expect(INVALID_CODE).to.equal('Invalid authorization code');
    given().when({ kind: 'redeem', at: '2026-01-01T00:01:00.000Z' }).thenFails(401, INVALID_CODE);
    given(issued, redeemed('2026-01-01T00:01:00.000Z')).when({ kind: 'redeem', at: '2026-01-01T00:02:00.000Z' }).thenFails(401, INVALID_CODE);
  });

  it('given events, when folded, then issued then redeemed; a code issued before sessions had ids has none; a stray redemption is ignored', () => {
    const fold = (...events: AuthorizationCodeEvent[]) => events.reduce(authorizationCodeDecider.evolve, authorizationCodeDecider.initialState());
    expect(fold()).to.deep.equal({ status: 'none' });
    expect(fold(issued)).to.deep.equal({ status: 'issued', userLaui: USER, expiresAt: EXPIRES, sessionId: SID });
    expect(fold(issued, redeemed(EXPIRES))).to.deep.equal({ status: 'redeemed', userLaui: USER, expiresAt: EXPIRES, sessionId: SID });
    const { session_id: _sid, ...withoutSession } = issued.data;
    expect(fold({ type: 'AuthorizationCodeIssued', data: withoutSession })).to.deep.equal({ status: 'issued', userLaui: USER, expiresAt: EXPIRES, sessionId: null });
    expect(fold(redeemed(EXPIRES))).to.deep.equal({ status: 'none' });
  });
});
