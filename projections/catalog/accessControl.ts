import { forbidden, notFound } from '../../shared/errors.ts';
import { EVERYONE, grants, type AccessMaps, type Permission } from '../../shared/access/permissions.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';

/** Who an anonymous caller is: EVERYONE, and nobody else. */
const ANONYMOUS: ReadonlySet<Laui> = new Set([EVERYONE]);

/** Parent chains are short in practice; the bound stops a corrupted (cyclic) chain. */
const MAX_DEPTH = 64;

export interface AccessControl {
  /** The caller, every group it belongs to (transitively) and EVERYONE. */
  principals(principal: Principal): Promise<Set<Laui>>;
  /** Access maps of the item, then of each true ancestor, nearest first. */
  chain(item: ItemDoc): Promise<AccessMaps[]>;
  can(principal: Principal, item: ItemDoc, permission: Permission, principals?: Set<Laui>): Promise<boolean>;
  /** The permission of a caller who presented no credential: what the item grants EVERYONE. */
  canAnonymously(item: ItemDoc, permission: Permission): Promise<boolean>;
  /** The live or soft-deleted item, or 404 `Item not found with laui: <laui>`; 403 without the permission. */
  require(principal: Principal, itemLaui: Laui, permission: Permission): Promise<ItemDoc>;
  /**
   * The principal a user's work runs as when no request carries it (a scheduled run, a worker):
   * null when the user no longer exists. Without a user lookup (fixtures) a plain, non-admin user.
   */
  principalOf(userLaui: Laui): Promise<Principal | null>;
}

/** What the access control needs to know of a user to act as them. */
export interface KnownUser {
  laui: Laui;
  username: string;
  is_admin: boolean;
  is_auditor?: boolean;
  must_change_password: boolean;
}

/**
 * Effective access (docs/decisions.md): a principal holds a permission on an item when it, or a
 * group it belongs to, has a granting role on the item or on any true ancestor. Admins pass.
 */
export const createAccessControl = (deps: {
  items: Collection<ItemDoc>;
  groupsOf(principalLaui: Laui): Promise<Set<Laui>>;
  users?: { peek(laui: Laui): Promise<KnownUser | null> };
}): AccessControl => {
  const control: AccessControl = {
    async principals(principal) {
      const set = await deps.groupsOf(principal.laui);
      set.add(principal.laui);
      // What is shared with everyone is shared with every signed-in caller too.
      set.add(EVERYONE);
      return set;
    },
    async chain(item) {
      const chain: AccessMaps[] = [item.access];
      let parent = item.parent_laui;
      for (let depth = 0; parent !== null && depth < MAX_DEPTH; depth += 1) {
        const doc = await deps.items.peek(parent);
        if (!doc) break;
        chain.push(doc.access);
        parent = doc.parent_laui;
      }
      return chain;
    },
    async can(principal, item, permission, principals) {
      if (principal.isAdmin) return true;
      return grants(principals ?? (await control.principals(principal)), await control.chain(item), permission);
    },
    async canAnonymously(item, permission) {
      return grants(ANONYMOUS, await control.chain(item), permission);
    },
    async require(principal, itemLaui, permission) {
      const item = await deps.items.get(itemLaui);
      if (!item) throw notFound(`Item not found with laui: ${itemLaui}`);
      if (!(await control.can(principal, item, permission))) throw forbidden();
      return item;
    },
    async principalOf(userLaui) {
      if (!deps.users) return { laui: userLaui, username: '', isAdmin: false, isAuditor: false, mustChangePassword: false };
      const user = await deps.users.peek(userLaui);
      return user ? { laui: user.laui, username: user.username, isAdmin: user.is_admin, isAuditor: user.is_auditor === true, mustChangePassword: user.must_change_password } : null;
    },
  };
  return control;
};
