import { assertNever } from '../../shared/assertNever.ts';
import { conflict, notFound, unauthorized } from '../../shared/errors.ts';
import type { Decider } from '../kernel/Decider.ts';
import { evolveUser, initialUserState } from './evolve.ts';
import type { UserCommand, UserState } from './user.ts';
import type { UserEvent } from '../../shared/domain-events/userEvents.ts';

export const decideUser = (command: UserCommand, state: UserState): UserEvent[] => {
  switch (command.kind) {
    case 'create':
      if (state.exists) throw conflict('User already exists');
      return [
        {
          type: 'UserCreated',
          data: {
            laui: command.laui,
            username: command.username,
            email: command.email,
            password_hash: command.passwordHash,
            must_change_password: command.mustChangePassword,
            is_admin: command.isAdmin,
            // Written only when granted: a UserCreated of a plain user reads as before.
            ...(command.isAuditor ? { is_auditor: true } : {}),
          },
        },
      ];
    case 'change-password':
      if (!state.exists) throw notFound('User not found');
      // The spec answers a wrong current password with 401 `User not authenticated`.
      if (!command.currentPasswordMatches) throw unauthorized('User not authenticated');
      return [{ type: 'UserPasswordChanged', data: { password_hash: command.newPasswordHash } }];
    case 'update-marketplace-token':
      if (!state.exists) throw notFound('User not found');
      return [{ type: 'MarketplaceTokenUpdated', data: { token: command.token } }];
    case 'set-auditor':
      if (!state.exists) throw notFound('User not found');
      // Idempotent: granting a role held already records nothing.
      return state.isAuditor === command.isAuditor ? [] : [{ type: 'UserAuditorRoleChanged', data: { is_auditor: command.isAuditor } }];
    default:
      return assertNever(command);
  }
};

export const userDecider: Decider<UserState, UserCommand, UserEvent> = {
  initialState: initialUserState,
  evolve: evolveUser,
  decide: decideUser,
};
