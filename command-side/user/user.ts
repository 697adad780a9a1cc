import type { Laui } from '../../shared/ids.ts';
import type { Sealed } from '../../shared/ports/SecretBox.ts';

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
