import { ROLES, type AccessMaps, type Role } from '../../shared/access/permissions.ts';
import type { Laui } from '../../shared/ids.ts';

export { emptyAccess, ROLES, type AccessMaps, type Role } from '../../shared/access/permissions.ts';

/** One role held by one principal: the unit the group events and the membership read model use. */
export interface Grant {
  role: Role;
  principal_laui: Laui;
}

export const grantsOf = (access: AccessMaps): Grant[] =>
  ROLES.flatMap((role) => Object.keys(access[role]).map((principal_laui) => ({ role, principal_laui })));

/** True when any of `principals` (a user and the groups it belongs to) holds one of `roles`. */
export const holdsAnyRole = (access: AccessMaps, principals: ReadonlyArray<Laui>, roles: ReadonlyArray<Role>): boolean =>
  roles.some((role) => principals.some((principal) => Object.hasOwn(access[role], principal)));

/** What changed between two access states, as grants added and grants removed, in role order. */
export const diffAccess = (before: AccessMaps, after: AccessMaps): { granted: Grant[]; revoked: Grant[] } => ({
  granted: grantsOf(after).filter((grant) => !Object.hasOwn(before[grant.role], grant.principal_laui)),
  revoked: grantsOf(before).filter((grant) => !Object.hasOwn(after[grant.role], grant.principal_laui)),
});
