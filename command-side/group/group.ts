import type { DomainEvent } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import type { AccessMaps, Role } from './access.ts';
import type { AccessPatch } from './applyAccessPatch.ts';

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

export type GroupState =
  | { status: 'absent' }
  | { status: 'active'; laui: Laui; name: string; description: string; access: AccessMaps }
  | { status: 'deleted'; laui: Laui; name: string };

/**
 * Who acts: `principals` are the caller and every group it belongs to (transitively), resolved
 * by the handler from the membership read model; admins pass every access check.
 */
export interface GroupActor {
  laui: Laui;
  isAdmin: boolean;
  principals: ReadonlyArray<Laui>;
}

export type GroupCommand =
  | { kind: 'create'; laui: Laui; name: string; description: string; creator: Laui; patch: AccessPatch | undefined }
  /** `description` undefined keeps the current one. */
  | { kind: 'update'; description: string | undefined; patch: AccessPatch | undefined; actor: GroupActor }
  | { kind: 'delete'; actor: GroupActor };

export const groupStream = (laui: Laui): string => `group-${laui}`;
/** Group names are unique regardless of case. */
export const groupNameKey = (name: string): string => `group:${name.toLowerCase()}`;
