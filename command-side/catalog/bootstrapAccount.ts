import { AppError } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import { releaseUniqueKey } from '../kernel/uniqueKey.ts';
import type { CatalogDeps } from './catalogDeps.ts';
import { createItem, planItem, UNIQUE_KEY_EXISTS } from './createItem.ts';
import { itemHoldingKey } from './keyHolder.ts';
import { itemStream } from './item.ts';

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
 * Root names carry no unique key (docs/decisions.md), so concurrent bootstraps of one account name
 * each created an account. A bootstrap reserves the account name for its caller: of any number of
 * concurrent bootstraps of one name by one caller exactly one creates the account; the others find
 * it through the reservation (not the read model, which may not have it yet) and reuse it, as a
 * bootstrap of an existing account does. Scoped to the caller: another user's account of that name
 * is not theirs to reuse, and root names stay unconstrained in the catalog.
 */
export const bootstrapAccountKey = (callerLaui: Laui, accountName: string): string => `bootstrap-account:${JSON.stringify([callerLaui, accountName])}`;

/** Rounds of "create, else reuse the holder" before a bootstrap gives up (a holder mid-creation or mid-deletion). */
const ENSURE_ATTEMPTS = 8;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const isKeyTaken = (error: unknown): error is AppError => error instanceof AppError && error.status === 409 && error.detail === UNIQUE_KEY_EXISTS;

/**
 * POST /catalog/bootstrap: an account's standard tree in one request: the account root, its trash
 * and users folders, a project and the project's standard folders. Idempotent: an account the
 * caller owns with that name is reused and only missing folders are created, so a retry after a
 * partial failure completes the tree rather than duplicating it. Concurrent bootstraps of one name
 * converge on one tree: an item another bootstrap created first (409 on its unique key) is reused.
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
  const accountKey = bootstrapAccountKey(principal.laui, request.account_name);

  /** The item holding the key, once the read model has it and the caller owns it; null to try creating again. */
  const reuseHolder = async (key: string, taken: AppError): Promise<Laui | null> => {
    const holder = await itemHoldingKey(deps.eventStore, key);
    if (holder === null) return null; // released meanwhile: the name is free again
    if (holder.state.status === 'none') return null; // reserved, its creation not appended yet
    if (holder.state.status !== 'live') {
      // Our own account reservation outliving its deleted account: free it for a new account.
      if (key === accountKey) await releaseUniqueKey(deps.eventStore, { key, ownerStream: itemStream(holder.laui), metadata });
      else throw taken;
      return null;
    }
    if (holder.position !== null) await settle(holder.position);
    const doc = await deps.items.get(holder.laui);
    if (!doc || !(await deps.access.can(principal, doc, 'OWN'))) throw taken;
    return holder.laui;
  };

  const ensure = async (parent: Laui | null, itemType: string, name: string): Promise<Laui> => {
    const candidates = await deps.items.find({ where: parent === null ? { is_root: true, name } : { parent_laui: parent, name } });
    for (const candidate of candidates) {
      if (candidate.item_type === itemType && !candidate.is_deleted && (await deps.access.can(principal, candidate, 'OWN'))) return candidate.laui;
    }
    const body = parent === null ? { item_type: itemType, name, is_root: true } : { item_type: itemType, name, parent_laui: parent };
    for (let attempt = 1; ; attempt += 1) {
      try {
        const item = await createItem(deps, principal, body, metadata, parent === null ? { uniqueKey: accountKey } : {});
        created.push(item.laui);
        position = item.position;
        // The next step reads this item back as a parent: wait until the read model has it.
        await settle(item.position);
        return item.laui;
      } catch (error) {
        if (!isKeyTaken(error)) throw error;
        const key = parent === null ? accountKey : (await planItem(deps, principal, body)).uniqueKey;
        if (key === null) throw error;
        const reused = await reuseHolder(key, error);
        if (reused !== null) return reused;
        if (attempt >= ENSURE_ATTEMPTS) throw error;
        await sleep(10 * 2 ** attempt * Math.random());
      }
    }
  };
  const account = await ensure(null, 'folder.account', request.account_name);
  const folders: Record<string, Laui> = {};
  for (const kind of ACCOUNT_FOLDERS) folders[kind] = await ensure(account, `folder.${kind}`, kind);
  const project = await ensure(account, 'folder.project', request.project_name);
  for (const kind of PROJECT_FOLDERS) folders[kind] = await ensure(project, `folder.${kind}`, kind);
  return { result: { account_laui: account, project_laui: project, folders, created }, position };
};
