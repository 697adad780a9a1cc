import { assertNever } from '../../shared/assertNever.ts';
import type { UserState } from './user.ts';
import type { UserEvent } from '../../shared/domain-events/userEvents.ts';

export const initialUserState = (): UserState => ({ exists: false });

export const evolveUser = (state: UserState, event: UserEvent): UserState => {
  switch (event.type) {
    case 'UserCreated':
      return {
        exists: true,
        laui: event.data.laui,
        username: event.data.username,
        passwordHash: event.data.password_hash,
        mustChangePassword: event.data.must_change_password,
        isAdmin: event.data.is_admin,
        isAuditor: event.data.is_auditor === true,
      };
    case 'UserPasswordChanged':
      return state.exists ? { ...state, passwordHash: event.data.password_hash, mustChangePassword: false } : state;
    case 'MarketplaceTokenUpdated':
      return state;
    case 'UserAuditorRoleChanged':
      return state.exists ? { ...state, isAuditor: event.data.is_auditor } : state;
    default:
      return assertNever(event);
  }
};
