import { AppError } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import type { CatalogDeps } from '../catalog/catalogDeps.ts';
import { createItem, UNIQUE_KEY_EXISTS } from '../catalog/createItem.ts';
import { itemStream } from '../catalog/item.ts';
import { itemHoldingKey } from '../catalog/keyHolder.ts';
import { releaseUniqueKey } from '../kernel/uniqueKey.ts';

export interface UserFolderDeps extends CatalogDeps {
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
}

/**
 * The reservation that makes a user's folder one per user. Root names carry no unique key, and an
 * in-process lock would not stop two service processes: the event store's reservation does, so
 * /ai/generate and /ai/agent, in any process and at once, find or make the same folder.
 */
export const userFolderKey = (userLaui: Laui): string => `user-folder:${userLaui}`;

const ENSURE_ATTEMPTS = 8;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const isKeyTaken = (error: unknown): boolean => error instanceof AppError && error.status === 409 && error.detail === UNIQUE_KEY_EXISTS;

/** Read-your-writes: the folder is read back from the read model as the chat history's parent. */
const settle = async (deps: UserFolderDeps, position: Position | null): Promise<void> => {
  if (position !== null) await deps.readModels.waitFor(position, deps.readYourWritesTimeoutMs);
};

/**
 * The caller's user folder (spec 2.2: `folder.user` holds chat_history items): the live folder holding
 * the caller's reservation (userFolderKey); without one, a root `folder.user` named after the
 * username is created, owned by the caller (roots need no rights). A folder the user deleted is
 * replaced by a new one (its reservation is released first). The holder is read from the event
 * store, not the read model: the loser of a concurrent first call learns the winner's folder at once.
 */
export const userFolderOf = async (deps: UserFolderDeps, principal: Principal, metadata: EventMetadata): Promise<Laui> => {
  const key = userFolderKey(principal.laui);
  for (let attempt = 1; ; attempt += 1) {
    const holder = await itemHoldingKey(deps.eventStore, key);
    if (holder !== null && holder.state.status === 'live') {
      await settle(deps, holder.position);
      return holder.laui;
    }
    if (holder !== null && holder.state.status !== 'none') await releaseUniqueKey(deps.eventStore, { key, ownerStream: itemStream(holder.laui), metadata });
    if (holder === null || holder.state.status !== 'none') {
      try {
        const created = await createItem(deps, principal, { item_type: 'folder.user', name: principal.username, is_root: true }, metadata, { uniqueKey: key });
        await settle(deps, created.position);
        return created.laui;
      } catch (error) {
        if (!isKeyTaken(error)) throw error;
      }
    }
    // Another request of this user is creating it: its creation shows up in a moment.
    if (attempt >= ENSURE_ATTEMPTS) throw new AppError(503, 'write_conflict');
    await sleep(10 * 2 ** attempt * Math.random());
  }
};
