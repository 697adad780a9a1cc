import { badRequest, unprocessable } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import { resolveItemType, validateItem } from '../../shared/item-types/itemTypes.ts';
import { uniqueKeyOf } from '../../shared/item-types/primaryKey.ts';
import { sealSecretFields } from '../../shared/item-types/secretFields.ts';
import { handleCommand, type CommandResult } from '../kernel/handleCommand.ts';
import { releaseUniqueKey, reserveUniqueKey } from '../kernel/uniqueKey.ts';
import { applyAccessPatch } from '../group/applyAccessPatch.ts';
import { parseAccessPatch } from './parseAccessPatch.ts';
import { typeFields, type CatalogDeps } from './catalogDeps.ts';
import { UNIQUE_KEY_EXISTS } from './createItem.ts';
import { itemDecider, requireSystemConfigRight } from './decide.ts';
import { actorOf, itemStream, type ItemCommand, type ItemState } from './item.ts';
import type { ItemEvent } from '../../shared/domain-events/itemEvents.ts';
import { linkDecider, linkKey, linkStream } from './link.ts';
import { referenceChecker } from './checkTaskReferences.ts';
import { requirePlacementRights } from './placementRights.ts';
import { requireRunnableSchedule } from '../../shared/task/requireRunnableSchedule.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';

/** Fields fixed at creation: moving an item or changing its type is not an update. */
const IMMUTABLE = ['item_type', 'parent_laui', 'is_root', 'laui', 'created_at', 'created_by', 'version', 'pk'];

const latestPosition = (...results: Array<CommandResult<unknown, unknown> | null>): Position | null =>
  results.reduce<Position | null>((latest, result) => (result?.position != null && (latest === null || result.position > latest) ? result.position : latest), null);

/**
 * The item as a change would leave it, checked as create checks it: its type's schema, a task's
 * schedule (a change that leaves an unrunnable one, including an old task's saved before this
 * check, is refused until the schedule is fixed) and a task's references (whoever changes it must
 * VIEW everything it will reference, or an editor could point its owner's scheduled runs, which act
 * with the owner's rights, at what they cannot see).
 */
export const checkedItemAfter = async (deps: CatalogDeps, principal: Principal, item: ItemDoc, changes: Record<string, unknown>): Promise<Record<string, unknown>> => {
  const merged = { ...typeFields(item), ...changes, item_type: item.item_type, name: changes.name ?? item.name, parent_laui: item.parent_laui };
  const entries = validateItem(item.item_type, merged, 'create');
  if (entries.length > 0) throw unprocessable(entries);
  if (resolveItemType(item.item_type)?.base === 'task') {
    requireRunnableSchedule(merged);
    await referenceChecker(deps).require(principal, merged);
  }
  return merged;
};

/**
 * Runs a change of `item` into `merged` with its unique key moved along: a changed key is reserved
 * before (409 when taken), given back when the change fails, and the old one released after.
 */
export const withUniqueKeyOf = async (
  deps: CatalogDeps,
  item: ItemDoc,
  merged: Record<string, unknown>,
  metadata: EventMetadata,
  change: () => Promise<CommandResult<ItemState, ItemEvent>>,
): Promise<CommandResult<ItemState, ItemEvent>> => {
  const oldKey = uniqueKeyOf(item.item_type, item);
  const newKey = uniqueKeyOf(item.item_type, merged);
  const owner = itemStream(item.laui);
  const moved = newKey !== null && newKey !== oldKey;
  if (moved) await reserveUniqueKey(deps.eventStore, { key: newKey, ownerStream: owner, conflictDetail: UNIQUE_KEY_EXISTS, metadata });
  let result: CommandResult<ItemState, ItemEvent>;
  try {
    result = await change();
  } catch (error) {
    // The change did not happen: give the new key back so the name stays usable.
    if (moved) await releaseUniqueKey(deps.eventStore, { key: newKey, ownerStream: owner, metadata });
    throw error;
  }
  if (oldKey !== null && newKey !== oldKey && result.events.length > 0) await releaseUniqueKey(deps.eventStore, { key: oldKey, ownerStream: owner, metadata });
  return result;
};

/** One command on an item's own stream. */
export const onItem = (deps: Pick<CatalogDeps, 'eventStore'>, metadata: EventMetadata, command: ItemCommand): Promise<CommandResult<ItemState, ItemEvent>> =>
  handleCommand({ eventStore: deps.eventStore, streamId: itemStream(command.laui), decider: itemDecider, command, metadata });

export interface UpdateRequest {
  item_laui: Laui;
  expected_version?: number;
  access_patch?: unknown;
  [field: string]: unknown;
}

/**
 * POST /catalog/update: EDIT on the item (OWN to change its access). The whole resulting item is
 * validated against its schema; a changed unique key is reserved before and released after.
 */
export const updateItem = async (deps: CatalogDeps, principal: Principal, request: UpdateRequest, metadata: EventMetadata): Promise<Position | null> => {
  const immutable = IMMUTABLE.filter((field) => Object.hasOwn(request, field));
  if (immutable.length > 0) throw badRequest(`Invalid argument: ${immutable.join(', ')} cannot be changed`);
  const item = await deps.access.require(principal, request.item_laui, request.access_patch === undefined ? 'EDIT' : 'OWN');
  const definition = resolveItemType(item.item_type);
  if (!definition) throw unprocessable(`Item type ${item.item_type} is no longer supported`);
  const changes = typeFields(request);
  if (request.name !== undefined) changes.name = request.name;
  // The decider refuses it too; checked first as well, or a refused rename would have reserved and released its new key.
  requireSystemConfigRight(actorOf(principal), item.item_type, item, changes);
  const merged = await checkedItemAfter(deps, principal, item, changes);
  // Moving it to another project or account needs VIEW there, as creating it there does.
  await requirePlacementRights(deps, principal, changes, item);
  const access = request.access_patch === undefined ? null : applyAccessPatch(item.access, parseAccessPatch(request.access_patch));
  const result = await withUniqueKeyOf(deps, item, merged, metadata, () =>
    onItem(deps, metadata, {
      kind: 'update',
      actor: actorOf(principal),
      laui: item.laui,
      changes: sealSecretFields(item.item_type, changes, deps.secrets, item),
      versionedFields: definition.versionedFields,
      expectedVersion: typeof request.expected_version === 'number' ? request.expected_version : null,
      access,
      revisionLaui: newLaui(new Date(metadata.at)),
    }),
  );
  return result.position;
};

/**
 * POST /catalog/delete: DELETE on the item. Soft sets deleted_at; hard removes the item from the
 * read models and frees its unique key while its stream keeps the history and a tombstone.
 * A hard delete of an item that still has children is refused: they would be orphaned.
 */
export const deleteItem = async (
  deps: CatalogDeps,
  principal: Principal,
  request: { item_laui: Laui; parent_laui?: Laui; hard_delete: boolean },
  metadata: EventMetadata,
): Promise<Position | null> => {
  const item = await deps.access.require(principal, request.item_laui, 'DELETE');
  // The decider refuses it below; checked first as well, or a refused delete would have removed the link.
  requireSystemConfigRight(actorOf(principal), item.item_type, item);
  let unlinked: CommandResult<unknown, unknown> | null = null;
  if (request.parent_laui !== undefined) {
    const [link] = await deps.links.find({ where: { parent_laui: request.parent_laui, child_laui: item.laui, true_parent: false }, limit: 1 });
    if (link) {
      unlinked = await handleCommand({ eventStore: deps.eventStore, streamId: linkStream(link.link_laui), decider: linkDecider, command: { kind: 'remove', at: metadata.at }, metadata });
      await releaseUniqueKey(deps.eventStore, { key: linkKey(link.parent_laui, item.laui), ownerStream: linkStream(link.link_laui), metadata });
    }
  }
  if (request.hard_delete) {
    const children = await deps.items.count({ parent_laui: item.laui });
    if (children > 0) throw badRequest(`Invalid argument: item ${item.laui} has ${children} children; delete them first`);
  }
  const result = await onItem(deps, metadata, { kind: request.hard_delete ? 'hard-delete' : 'soft-delete', actor: actorOf(principal), laui: item.laui, at: metadata.at });
  const key = uniqueKeyOf(item.item_type, item);
  if (request.hard_delete && key !== null) await releaseUniqueKey(deps.eventStore, { key, ownerStream: itemStream(item.laui), metadata });
  return latestPosition(result, unlinked);
};

/** POST /catalog/restore/{item_laui}: DELETE on the item; a hard-deleted item is gone (404). */
export const restoreItem = async (deps: CatalogDeps, principal: Principal, itemLaui: Laui, metadata: EventMetadata): Promise<Position | null> => {
  const item = await deps.access.require(principal, itemLaui, 'DELETE');
  const result = await onItem(deps, metadata, { kind: 'restore', actor: actorOf(principal), laui: item.laui, at: metadata.at });
  return result.position;
};
