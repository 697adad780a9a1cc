import type { Laui } from '../../shared/ids.ts';
import type { AccessMaps } from './access.ts';
import type { AccessPatch } from './applyAccessPatch.ts';

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
