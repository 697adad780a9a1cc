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

/**
 * The principal every caller is, signed in or not: an item whose `viewers` name it is shared with
 * everyone (`access_patch: {add: {viewers: {"000000000000000000000000": "true"}}}`). Anonymous
 * callers of the public AI routes hold this principal only. It may only be a viewer (an access patch
 * naming it in another role is a 422) and never a group's member: no caller gets more than VIEW
 * through it, and membership is never inherited from it. A LAUI no item or user can have (its
 * timestamp is 1970).
 */
export const EVERYONE: Laui = '000000000000000000000000';

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
