import type { EventMetadata } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { CatalogDeps } from '../catalog/catalogDeps.ts';
import { createItem } from '../catalog/createItem.ts';

export interface UserFolderDeps extends CatalogDeps {
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
}

const isOwnFolder = (doc: ItemDoc, principal: Principal): boolean => doc.item_type === 'folder.user' && !doc.is_deleted && doc.access.owners[principal.laui] === 'true';

interface FolderMemory {
  /** Finds under way, per user: two first calls of one user at once make one folder (in one process). */
  pending: Map<Laui, Promise<Laui>>;
  /** The folder found last, per user: checked again (live, still theirs) at each use, not searched for. */
  known: Map<Laui, Laui>;
}
/** Per items collection (one per service in a process). */
const memories = new WeakMap<object, FolderMemory>();
const memoryOf = (items: object): FolderMemory => {
  let memory = memories.get(items);
  if (!memory) {
    memory = { pending: new Map(), known: new Map() };
    memories.set(items, memory);
  }
  return memory;
};

/**
 * The caller's user folder (`folder.user`, spec 2.2: it holds chat_history items): a live one the
 * caller owns directly (an administrator may have made it under the account's `users` folder and
 * given it to them), the one named after the username first, else the oldest; without one, a root
 * `folder.user` named after the username is created, owned by the caller (roots need no rights).
 */
export const userFolderOf = async (deps: UserFolderDeps, principal: Principal, metadata: EventMetadata): Promise<Laui> => {
  const { pending, known } = memoryOf(deps.items);
  const cached = known.get(principal.laui);
  if (cached !== undefined) {
    const doc = await deps.items.peek(cached);
    if (doc && isOwnFolder(doc, principal)) return cached;
    known.delete(principal.laui);
  }
  const running = pending.get(principal.laui);
  if (running) return await running;
  const finding = findOrCreate(deps, principal, metadata).finally(() => pending.delete(principal.laui));
  pending.set(principal.laui, finding);
  const laui = await finding;
  known.set(principal.laui, laui);
  return laui;
};

const findOrCreate = async (deps: UserFolderDeps, principal: Principal, metadata: EventMetadata): Promise<Laui> => {
  const own = (await deps.items.find({ where: { item_type: 'folder.user' } })).filter((doc) => isOwnFolder(doc, principal));
  own.sort((a, b) => Number(b.name === principal.username) - Number(a.name === principal.username) || a.created_seq - b.created_seq);
  const found = own[0];
  if (found) return found.laui;
  const created = await createItem(deps, principal, { item_type: 'folder.user', name: principal.username, is_root: true }, metadata);
  // The chat history is created under it next, which reads the parent from the read model.
  await deps.readModels.waitFor(created.position, deps.readYourWritesTimeoutMs);
  return created.laui;
};
