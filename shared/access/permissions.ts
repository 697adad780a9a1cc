import type { Laui } from '../ids.ts';

/**
 * Access maps of an item or group: principal (user or group LAUI) -> the string "true", the
 * shape clients already send. Effective access is the union along the true-parent chain.
 */
export interface AccessMaps {
  owners: Record<Laui, 'true'>;
  editors: Record<Laui, 'true'>;
  viewers: Record<Laui, 'true'>;
}

export type Role = keyof AccessMaps;
export const ROLES: ReadonlyArray<Role> = ['owners', 'editors', 'viewers'];

export type Permission = 'VIEW' | 'EDIT' | 'OWN' | 'DELETE';

/** The role-to-permission table (docs/decisions.md): deleting is an owner's right. */
export const ROLES_GRANTING: Record<Permission, ReadonlyArray<Role>> = {
  VIEW: ['owners', 'editors', 'viewers'],
  EDIT: ['owners', 'editors'],
  OWN: ['owners'],
  DELETE: ['owners'],
};

export const emptyAccess = (): AccessMaps => ({ owners: {}, editors: {}, viewers: {} });

/** True when any principal holds a granting role on any map of the chain (item, then ancestors). */
export const grants = (principals: ReadonlySet<Laui>, chain: ReadonlyArray<AccessMaps>, permission: Permission): boolean => {
  for (const access of chain) {
    for (const role of ROLES_GRANTING[permission]) {
      const map = access[role];
      for (const principal of principals) if (map[principal] === 'true') return true;
    }
  }
  return false;
};
