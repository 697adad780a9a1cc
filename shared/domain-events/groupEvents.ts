import type { Role } from '../access/permissions.ts';
import type { DomainEvent } from '../events.ts';
import type { Laui } from '../ids.ts';

/**
 * Events of `group-<laui>` streams. Access changes are one event per (role, principal) so that
 * the membership read model can keep one document per grant: the projection runner maps an
 * event to one document. A creation or an update appends its grants in the same commit.
 */
export type GroupEvent =
  | DomainEvent<'GroupCreated', { laui: Laui; name: string; description: string }>
  | DomainEvent<'GroupDescriptionChanged', { description: string }>
  | DomainEvent<'GroupAccessGranted', { role: Role; principal_laui: Laui }>
  | DomainEvent<'GroupAccessRevoked', { role: Role; principal_laui: Laui }>
  /** Preceded in its commit by a revocation of every grant, so no membership outlives the group. */
  | DomainEvent<'GroupDeleted', { laui: Laui; name: string }>;
