import { assertNever } from '../../shared/assertNever.ts';
import { conflict, unauthorized } from '../../shared/errors.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Decider } from '../kernel/Decider.ts';
import { INVALID_CODE } from './authorizationCodeDecider.ts';
import type { RefreshTokenEvent, RefreshFamilyEvent } from '../../shared/domain-events/authEvents.ts';

export type RefreshTokenState =
  | { status: 'none' }
  | { status: 'active' | 'rotated' | 'revoked'; userLaui: Laui; familyId: string; expiresAt: string; sessionId: string | null };

export type RefreshTokenCommand =
  | { kind: 'issue'; userLaui: Laui; familyId: string; expiresAt: string; sessionId: string }
  /** sessionEnded: the family's login session was ended (logout): its tokens are dead like a revoked family's. */
  | { kind: 'redeem'; at: string; familyRevoked: boolean; sessionEnded: boolean }
  | { kind: 'revoke'; at: string };

export const refreshTokenDecider: Decider<RefreshTokenState, RefreshTokenCommand, RefreshTokenEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (state, event) => {
    switch (event.type) {
      case 'RefreshTokenIssued':
        return {
          status: 'active',
          userLaui: event.data.user_laui,
          familyId: event.data.family_id,
          expiresAt: event.data.expires_at,
          sessionId: event.data.session_id ?? null,
        };
      case 'RefreshTokenRotated':
        return state.status === 'none' ? state : { ...state, status: 'rotated' };
      case 'RefreshTokenReuseDetected':
      case 'RefreshTokenRevoked':
        return state.status === 'none' ? state : { ...state, status: 'revoked' };
      default:
        return assertNever(event);
    }
  },
  decide: (command, state) => {
    switch (command.kind) {
      case 'issue':
        if (state.status !== 'none') throw conflict('Refresh token collision');
        return [
          {
            type: 'RefreshTokenIssued',
            data: { user_laui: command.userLaui, family_id: command.familyId, expires_at: command.expiresAt, session_id: command.sessionId },
          },
        ];
      case 'redeem':
        if (state.status === 'rotated') {
          return [{ type: 'RefreshTokenReuseDetected', data: { at: command.at, family_id: state.familyId } }];
        }
        if (state.status !== 'active' || command.familyRevoked || command.sessionEnded || Date.parse(command.at) > Date.parse(state.expiresAt)) {
          throw unauthorized(INVALID_CODE);
        }
        return [{ type: 'RefreshTokenRotated', data: { at: command.at } }];
      case 'revoke':
        return state.status === 'active' ? [{ type: 'RefreshTokenRevoked', data: { at: command.at } }] : [];
      default:
        return assertNever(command);
    }
  },
};

export const refreshFamilyDecider: Decider<{ revoked: boolean }, { kind: 'revoke'; reason: string }, RefreshFamilyEvent> = {
  initialState: () => ({ revoked: false }),
  evolve: () => ({ revoked: true }),
  decide: (command, state) => (state.revoked ? [] : [{ type: 'RefreshFamilyRevoked', data: { reason: command.reason } }]),
};
