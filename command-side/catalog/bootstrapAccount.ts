import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { CatalogDeps } from './catalogDeps.ts';
import { createItem } from './createItem.ts';

/** The standard folders of a project (the 2.2 children of folder.project), named after their kind. */
export const PROJECT_FOLDERS = ['action', 'asset', 'workflow', 'operator', 'payload', 'connection', 'bootstrap', 'config', 'ai'] as const;
export const ACCOUNT_FOLDERS = ['trash', 'users'] as const;

export interface BootstrapResult {
  account_laui: Laui;
  project_laui: Laui;
  folders: Record<string, Laui>;
  created: Laui[];
}

/**
 * POST /catalog/bootstrap: an account's standard tree in one request: the account root, its trash
 * and users folders, a project and the project's standard folders. Idempotent: an account the
 * caller owns with that name is reused and only missing folders are created, so a retry after a
 * partial failure completes the tree rather than duplicating it.
 */
export const bootstrapAccount = async (
  deps: CatalogDeps,
  principal: Principal,
  request: { account_name: string; project_name: string },
  metadata: EventMetadata,
  settle: (position: Position) => Promise<unknown>,
): Promise<{ result: BootstrapResult; position: Position | null }> => {
  const created: Laui[] = [];
  let position: Position | null = null;
  const ensure = async (parent: Laui | null, itemType: string, name: string): Promise<Laui> => {
    const candidates = await deps.items.find({ where: parent === null ? { is_root: true, name } : { parent_laui: parent, name } });
    for (const candidate of candidates) {
      if (candidate.item_type === itemType && !candidate.is_deleted && (await deps.access.can(principal, candidate, 'OWN'))) return candidate.laui;
    }
    const body = parent === null ? { item_type: itemType, name, is_root: true } : { item_type: itemType, name, parent_laui: parent };
    const item = await createItem(deps, principal, body, metadata);
    created.push(item.laui);
    position = item.position;
    // The next step reads this item back as a parent: wait until the read model has it.
    await settle(item.position);
    return item.laui;
  };
  const account = await ensure(null, 'folder.account', request.account_name);
  const folders: Record<string, Laui> = {};
  for (const kind of ACCOUNT_FOLDERS) folders[kind] = await ensure(account, `folder.${kind}`, kind);
  const project = await ensure(account, 'folder.project', request.project_name);
  for (const kind of PROJECT_FOLDERS) folders[kind] = await ensure(project, `folder.${kind}`, kind);
  return { result: { account_laui: account, project_laui: project, folders, created }, position };
};
