import { deciderSpecification } from '../../test/support/deciderSpecification.ts';
import { refreshTokenDecider } from './refreshTokenDecider.ts';
import { sessionDecider } from './sessionDecider.ts';

const SID = 'ab'.repeat(16);
const USER = '65a000000000000000000001';

describe('sessionDecider', () => {
  const given = deciderSpecification(sessionDecider);

  it('given an open session, when it is ended, then SessionEnded', () => {
    given()
      .when({ kind: 'end', sessionId: SID, userLaui: USER, reason: 'logout' })
      .then([{ type: 'SessionEnded', data: { session_id: SID, user_laui: USER, reason: 'logout' } }]);
  });

  it('given an ended session, when it is ended again, then nothing is recorded', () => {
    given({ type: 'SessionEnded', data: { session_id: SID, user_laui: USER, reason: 'logout' } })
      .when({ kind: 'end', sessionId: SID, userLaui: USER, reason: 'logout' })
      .then([]);
  });
});

describe('refreshTokenDecider and ended sessions', () => {
  const given = deciderSpecification(refreshTokenDecider);
  const issued = {
    type: 'RefreshTokenIssued' as const,
    data: { user_laui: USER, family_id: 'f1', expires_at: '2026-02-01T00:00:00.000Z', session_id: SID },
  };

  it('given an active token of an ended session, when redeemed, then 401 Invalid authorization code', () => {
    given(issued)
      .when({ kind: 'redeem', at: '2026-01-01T00:00:00.000Z', familyRevoked: false, sessionEnded: true })
      .thenFails(401, 'Invalid authorization code');
  });

  it('given an active token of an open session, when redeemed, then it rotates', () => {
    given(issued)
      .when({ kind: 'redeem', at: '2026-01-01T00:00:00.000Z', familyRevoked: false, sessionEnded: false })
      .then([{ type: 'RefreshTokenRotated', data: { at: '2026-01-01T00:00:00.000Z' } }]);
  });
});
