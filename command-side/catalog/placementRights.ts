import { forbidden } from '../../shared/errors.ts';
import { isLaui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { AccessControl } from '../../projections/catalog/accessControl.ts';

/**
 * The fields by which an item says where it belongs besides its parent: a task's or an action's
 * project and account (and any item type's, as extra keys). A task's unique key holds its project
 * and account, and the scheduler, ready-to-run and the cron of a project find tasks by
 * `project_laui`: naming a project is acting in it.
 */
export const PLACEMENT_FIELDS = ['project_laui', 'account_laui'] as const;

/**
 * 403 `Access denied` unless the principal can VIEW the project and account the item names
 * (`fields`). On an update, `before` is the stored item and only the fields that change are checked:
 * whoever may edit an item need not see the project above it to change its description. A LAUI that
 * names no item is not refused here (no one's project can be claimed through it; a task's validation
 * reports what it must find). The parent is create's own check (EDIT), and cannot change.
 */
export const requirePlacementRights = async (
  deps: { items: Pick<Collection<ItemDoc>, 'peek'>; access: Pick<AccessControl, 'can'> },
  principal: Principal,
  fields: Readonly<Record<string, unknown>>,
  before?: Readonly<Record<string, unknown>>,
): Promise<void> => {
  if (principal.isAdmin) return;
  for (const field of PLACEMENT_FIELDS) {
    const laui = fields[field];
    if (!isLaui(laui) || (before !== undefined && before[field] === laui)) continue;
    const item = await deps.items.peek(laui);
    if (item !== null && !(await deps.access.can(principal, item, 'VIEW'))) throw forbidden();
  }
};
