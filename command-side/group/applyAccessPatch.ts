import { ROLES, type AccessMaps, type Role } from '../../shared/access/permissions.ts';

type RoleMap = AccessMaps[Role];

/**
 * The write-side access change of groups and catalog items (spec 4.6, 2.1):
 * `{add: {owners, editors, viewers}, remove: {owners, editors, viewers}}`, every part optional.
 */
export interface AccessPatch {
  add?: Partial<Record<Role, RoleMap>>;
  remove?: Partial<Record<Role, RoleMap>>;
}

/**
 * Applies `patch` to `access` and returns new maps (the input is left untouched). Removals are
 * applied before additions, so a principal named in both `remove` and `add` of one role keeps
 * the role. Removing a principal that does not hold the role is a no-op, as is adding one that does.
 * Whether the result is acceptable (a last owner kept) is the caller's rule, not this function's.
 */
export const applyAccessPatch = (access: AccessMaps, patch: AccessPatch | undefined): AccessMaps => {
  const next = {} as AccessMaps;
  for (const role of ROLES) {
    const map: RoleMap = { ...access[role] };
    for (const principal of Object.keys(patch?.remove?.[role] ?? {})) delete map[principal];
    for (const principal of Object.keys(patch?.add?.[role] ?? {})) map[principal] = 'true';
    next[role] = map;
  }
  return next;
};

/** True when the patch names anyone in `role`, to add or to remove. */
export const patchTouches = (patch: AccessPatch | undefined, role: Role): boolean =>
  Object.keys(patch?.add?.[role] ?? {}).length > 0 || Object.keys(patch?.remove?.[role] ?? {}).length > 0;
