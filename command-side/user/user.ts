import type { DomainEvent } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Sealed } from '../../shared/ports/SecretBox.ts';

/** Events of `user-<laui>` streams. Password hashes only; secrets sealed with the deployment key. */
export type UserEvent =
  | DomainEvent<
      'UserCreated',
      /** is_auditor: absent on users created before the auditor role existed (false). */
      { laui: Laui; username: string; email: string; password_hash: string; must_change_password: boolean; is_admin: boolean; is_auditor?: boolean }
    >
  | DomainEvent<'UserPasswordChanged', { password_hash: string }>
  | DomainEvent<'MarketplaceTokenUpdated', { token: Sealed }>
  /** The auditor role (reads the whole event log, GET /events) granted or withdrawn. */
  | DomainEvent<'UserAuditorRoleChanged', { is_auditor: boolean }>;

export type UserState =
  | { exists: false }
  | {
      exists: true;
      laui: Laui;
      username: string;
      passwordHash: string;
      mustChangePassword: boolean;
      isAdmin: boolean;
      isAuditor: boolean;
    };

export type UserCommand =
  | {
      kind: 'create';
      laui: Laui;
      username: string;
      email: string;
      passwordHash: string;
      mustChangePassword: boolean;
      isAdmin: boolean;
      isAuditor: boolean;
    }
  /** The handler checks the current password (slow hashing is I/O-like) and says so here. */
  | { kind: 'change-password'; currentPasswordMatches: boolean; newPasswordHash: string }
  | { kind: 'update-marketplace-token'; token: Sealed }
  | { kind: 'set-auditor'; isAuditor: boolean };

export const userStream = (laui: Laui): string => `user-${laui}`;
export const usernameKey = (username: string): string => `user:${username.toLowerCase()}`;
