import { expect } from 'chai';
import { deciderSpecification } from '../../test/support/deciderSpecification.ts';
import type { RefreshFamilyEvent, RefreshTokenEvent } from '../../shared/domain-events/authEvents.ts';
import { INVALID_CODE } from './authorizationCodeDecider.ts';
import { refreshFamilyDecider, refreshTokenDecider, type RefreshTokenCommand } from './refreshTokenDecider.ts';

const USER = '65a000000000000000000001';
const SID = 'ab'.repeat(16);
const EXPIRES = '2026-02-01T00:00:00.000Z';
const BEFORE = '2026-01-01T00:00:00.000Z';
const issued: RefreshTokenEvent = { type: 'RefreshTokenIssued', data: { user_laui: USER, family_id: 'f1', expires_at: EXPIRES, session_id: SID } };
const rotated: RefreshTokenEvent = { type: 'RefreshTokenRotated', data: { at: BEFORE } };
const revoked: RefreshTokenEvent = { type: 'RefreshTokenRevoked', data: { at: BEFORE } };
const reused: RefreshTokenEvent = { type: 'RefreshTokenReuseDetected', data: { at: BEFORE, family_id: 'f1' } };
const redeem = (at: string, flags: { familyRevoked?: boolean; sessionEnded?: boolean } = {}): RefreshTokenCommand => ({
  kind: 'redeem',
  at,
  familyRevoked: flags.familyRevoked ?? false,
  sessionEnded: flags.sessionEnded ?? false,
});

describe('refresh token decider', () => {
  const given = deciderSpecification(refreshTokenDecider);

  it('given no token, when issued, then RefreshTokenIssued carries the user, family, expiry and session', () => {
    given().when({ kind: 'issue', userLaui: USER, familyId: 'f1', expiresAt: EXPIRES, sessionId: SID }).then([issued]);
  });

  it('given a token in any status, when issued again (a collision), then 409 Refresh token collision', () => {
    const issue = { kind: 'issue', userLaui: USER, familyId: 'f2', expiresAt: EXPIRES, sessionId: SID } as const;
    for (const history of [[issued], [issued, rotated], [issued, revoked]]) given(...history).when(issue).thenFails(409, 'Refresh token collision');
  });

  it('given an active token, when redeemed before or at its expiry, then it rotates', () => {
    given(issued).when(redeem(BEFORE)).then([{ type: 'RefreshTokenRotated', data: { at: BEFORE } }]);
    given(issued).when(redeem(EXPIRES)).then([{ type: 'RefreshTokenRotated', data: { at: EXPIRES } }]);
  });

  it('given an active token, when redeemed after its expiry, of a revoked family or of an ended session, then 401 Invalid authorization code', () => {
    given(issued).when(redeem('2026-02-01T00:00:00.001Z')).thenFails(401, INVALID_CODE);
    given(issued).when(redeem(BEFORE, { familyRevoked: true })).thenFails(401, INVALID_CODE);
    given(issued).when(redeem(BEFORE, { sessionEnded: true })).thenFails(401, INVALID_CODE);
  });

  it('given no token, a revoked one or one revoked on reuse, when redeemed, then 401 Invalid authorization code', () => {
    given().when(redeem(BEFORE)).thenFails(401, INVALID_CODE);
    given(issued, revoked).when(redeem(BEFORE)).thenFails(401, INVALID_CODE);
    given(issued, rotated, reused).when(redeem(BEFORE)).thenFails(401, INVALID_CODE);
  });

  it('given a rotated token, when presented again (even expired, or of a revoked family), then RefreshTokenReuseDetected names its family', () => {
    const detected = (at: string): RefreshTokenEvent[] => [{ type: 'RefreshTokenReuseDetected', data: { at, family_id: 'f1' } }];
    given(issued, rotated).when(redeem('2026-01-05T00:00:00.000Z')).then(detected('2026-01-05T00:00:00.000Z'));
    given(issued, rotated).when(redeem('2026-03-01T00:00:00.000Z', { familyRevoked: true, sessionEnded: true })).then(detected('2026-03-01T00:00:00.000Z'));
  });

  it('given an active token, when revoked, then RefreshTokenRevoked; a token not active records nothing', () => {
    given(issued).when({ kind: 'revoke', at: BEFORE }).then([revoked]);
    given().when({ kind: 'revoke', at: BEFORE }).then([]);
    given(issued, rotated).when({ kind: 'revoke', at: BEFORE }).then([]);
    given(issued, revoked).when({ kind: 'revoke', at: BEFORE }).then([]);
  });

  it('given events, when folded, then issued is active, rotated rotated, revoked and reuse revoked; events before the issue are ignored', () => {
    const fold = (...events: RefreshTokenEvent[]) => events.reduce(refreshTokenDecider.evolve, refreshTokenDecider.initialState());
    const active = { status: 'active', userLaui: USER, familyId: 'f1', expiresAt: EXPIRES, sessionId: SID };
    expect(fold()).to.deep.equal({ status: 'none' });
    expect(fold(issued)).to.deep.equal(active);
    expect(fold(issued, rotated)).to.deep.equal({ ...active, status: 'rotated' });
    expect(fold(issued, revoked)).to.deep.equal({ ...active, status: 'revoked' });
    expect(fold(issued, rotated, reused)).to.deep.equal({ ...active, status: 'revoked' });
    for (const stray of [rotated, revoked, reused]) expect(fold(stray)).to.deep.equal({ status: 'none' });
    const { session_id: _sid, ...withoutSession } = issued.data;
    expect(fold({ type: 'RefreshTokenIssued', data: withoutSession })).to.deep.equal({ ...active, sessionId: null });
  });
});

describe('refresh family decider', () => {
  const given = deciderSpecification(refreshFamilyDecider);
  const familyRevoked: RefreshFamilyEvent = { type: 'RefreshFamilyRevoked', data: { reason: 'reuse' } };

  it('given a family, when revoked, then RefreshFamilyRevoked with the reason', () => {
    given().when({ kind: 'revoke', reason: 'reuse' }).then([familyRevoked]);
  });

  it('given a revoked family, when revoked again, then nothing is recorded', () => {
    given(familyRevoked).when({ kind: 'revoke', reason: 'logout' }).then([]);
  });

  it('given events, when folded, then a revocation revokes', () => {
    expect(refreshFamilyDecider.initialState()).to.deep.equal({ revoked: false });
    expect(refreshFamilyDecider.evolve(refreshFamilyDecider.initialState(), familyRevoked)).to.deep.equal({ revoked: true });
  });
});
