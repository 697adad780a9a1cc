import type { DomainEvent } from '../events.ts';
import type { Laui } from '../ids.ts';
import type { Sealed } from '../ports/SecretBox.ts';

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
