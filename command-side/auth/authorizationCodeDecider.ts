import { assertNever } from '../../shared/assertNever.ts';
import { conflict, unauthorized } from '../../shared/errors.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Decider } from '../kernel/Decider.ts';
import type { AuthorizationCodeEvent } from '../../shared/domain-events/authEvents.ts';

export type AuthorizationCodeState =
  | { status: 'none' }
  | { status: 'issued' | 'redeemed'; userLaui: Laui; expiresAt: string; sessionId: string | null };

export type AuthorizationCodeCommand =
  | { kind: 'issue'; userLaui: Laui; clientId: string; expiresAt: string; sessionId: string }
  | { kind: 'redeem'; at: string };

export const INVALID_CODE = 'Invalid authorization code';

export const authorizationCodeDecider: Decider<AuthorizationCodeState, AuthorizationCodeCommand, AuthorizationCodeEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (state, event) => {
    switch (event.type) {
      case 'AuthorizationCodeIssued':
        return { status: 'issued', userLaui: event.data.user_laui, expiresAt: event.data.expires_at, sessionId: event.data.session_id ?? null };
      case 'AuthorizationCodeRedeemed':
        return state.status === 'none' ? state : { ...state, status: 'redeemed' };
      default:
        return assertNever(event);
    }
  },
  decide: (command, state) => {
    switch (command.kind) {
      case 'issue':
        if (state.status !== 'none') throw conflict('Authorization code collision');
        return [
          {
            type: 'AuthorizationCodeIssued',
            data: { user_laui: command.userLaui, client_id: command.clientId, expires_at: command.expiresAt, session_id: command.sessionId },
          },
        ];
      case 'redeem':
        if (state.status !== 'issued' || Date.parse(command.at) > Date.parse(state.expiresAt)) throw unauthorized(INVALID_CODE);
        return [{ type: 'AuthorizationCodeRedeemed', data: { at: command.at } }];
      default:
        return assertNever(command);
    }
  },
};
