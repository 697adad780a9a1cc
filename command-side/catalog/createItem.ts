import { forbidden, notFound, unprocessable } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import { emptyAccess, type AccessMaps } from '../../shared/access/permissions.ts';
import {
  allowedChildren,
  applyDefaults,
  checkRootRules,
  isChildAllowed,
  resolveItemType,
  unknownItemTypeEntry,
  validateItem,
} from '../../shared/item-types/itemTypes.ts';
import { uniqueKeyOf } from '../../shared/item-types/primaryKey.ts';
import { sealSecretFields } from '../../shared/item-types/secretFields.ts';
import { reserveUniqueKeyAndCreate, uniqueKeyStream, uniqueKeyDecider } from '../kernel/uniqueKey.ts';
import { loadState } from '../kernel/handleCommand.ts';
import { applyAccessPatch } from '../group/applyAccessPatch.ts';
import { itemCreationEvents } from './itemCreatedEvent.ts';
import { parseAccessPatch } from './parseAccessPatch.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { typeFields, type CatalogDeps } from './catalogDeps.ts';
import { actorOf, itemNotFound, itemStream } from './item.ts';
import type { ImportedFrom, ItemEvent } from '../../shared/domain-events/itemEvents.ts';
import { itemStatesOf } from './itemStates.ts';
import { itemDecider, requireSystemConfigRight } from './decide.ts';
import { initialScheduleChanges } from '../../shared/task/scheduleChanges.ts';
import { referenceChecker } from './checkTaskReferences.ts';
import { requirePlacementRights } from './placementRights.ts';
import { requireRunnableSchedule } from '../../shared/task/requireRunnableSchedule.ts';

export const UNIQUE_KEY_EXISTS = 'Item already exists with the same unique key';

/** Item types that may stand at the root of the tree (docs/decisions.md). */
export const ROOT_TYPES: ReadonlySet<string> = new Set(['folder.account', 'folder.user']);

export interface PlannedItem {
  itemType: string;
  name: string;
  parent: ItemDoc | null;
  fields: Record<string, unknown>;
  access: AccessMaps;
  uniqueKey: string | null;
}

/**
 * Everything create checks before it writes, shared with POST /catalog/validate so that both give
 * the same answer: schema (422 list), root rules, parent existence (404) and type (422 object),
 * EDIT on the parent (403), access_patch, VIEW on the project and account it names (403), a task's
 * references (403), and whether the unique key is free (409).
 */
export const planItem = async (deps: CatalogDeps, principal: Principal, body: Record<string, unknown>): Promise<PlannedItem> => {
  const itemType = body.item_type;
  if (typeof itemType !== 'string') {
    throw unprocessable([{ type: 'missing', loc: ['body', 'item_type'], msg: 'Field required', input: itemType ?? null }]);
  }
  const definition = resolveItemType(itemType);
  if (!definition) throw unprocessable([unknownItemTypeEntry(itemType)]);
  const entries = [...checkRootRules(body), ...validateItem(itemType, body, 'create')];
  if (entries.length > 0) throw unprocessable(entries);
  // A schedule that can never run is refused as POST /task/run refuses it (spec 4.2 rules 3-4): saved,
  // it would stay `scheduled` forever. Checked on the body alone, before any lookup.
  if (definition.base === 'task') requireRunnableSchedule(body);
  const isRoot = body.is_root === true;
  if (isRoot && !ROOT_TYPES.has(definition.type)) {
    throw unprocessable({ message: `${definition.type} cannot be a root item`, item_type_passed: itemType, allowed_item_types: [...ROOT_TYPES] });
  }
  let parent: ItemDoc | null = null;
  if (!isRoot) {
    const parentLaui = String(body.parent_laui);
    // Read only (its laui, type and access chain): no copy of the document.
    parent = await deps.items.peek(parentLaui);
    if (!parent || parent.is_deleted) throw notFound(itemNotFound(parentLaui));
    if (!isChildAllowed(parent.item_type, definition.type)) {
      throw unprocessable({
        message: `Item type ${itemType} is not allowed under ${parent.item_type}`,
        item_type_passed: itemType,
        allowed_item_types: allowedChildren(parent.item_type),
      });
    }
    if (!(await deps.access.can(principal, parent, 'EDIT'))) throw forbidden();
  }
  const owner: AccessMaps = { ...emptyAccess(), owners: { [principal.laui]: 'true' } };
  const access = body.access_patch === undefined ? owner : applyAccessPatch(owner, parseAccessPatch(body.access_patch));
  const fields = applyDefaults(definition.type, typeFields(body));
  // The decider refuses it too (create decides before it writes anything); checked here as well so
  // that validate answers as create would.
  requireSystemConfigRight(actorOf(principal), definition.type, fields);
  // The project and account it names: VIEW on each, or anyone could file items (and take task
  // names) in a stranger's project.
  await requirePlacementRights(deps, principal, fields);
  // A task hands its connection to its operator's code: its author must VIEW all it references.
  if (definition.base === 'task') await referenceChecker(deps).require(principal, fields);
  // Spec 2.4: a scheduled task's logical_date starts at its start_date (floored to the cron
  // granularity), and its next_run_date is the first fire from it, from its creation on: ready-to-run
  // and diagnose see them whether or not a cron ever ran (the scheduler fills only what is missing).
  if (definition.base === 'task') Object.assign(fields, initialScheduleChanges(fields));
  const name = String(body.name);
  const uniqueKey = uniqueKeyOf(definition.type, { ...fields, name, parent_laui: parent?.laui ?? null });
  return { itemType: definition.type, name, parent, fields, access, uniqueKey };
};

/** True when the unique key is free (used by validate; create relies on the reservation itself). */
export const uniqueKeyIsFree = async (deps: CatalogDeps, key: string | null): Promise<boolean> =>
  key === null || (await loadState(deps.eventStore, uniqueKeyStream(key), uniqueKeyDecider)).owner === null;

export const createItem = async (
  deps: CatalogDeps,
  principal: Principal,
  body: Record<string, unknown>,
  metadata: EventMetadata,
  /**
   * uniqueKey: a reservation for an item that has no unique key of its own (a bootstrap's account root).
   * importedFrom: a marketplace import's source, recorded on the item's ItemCreated.
   */
  options: { uniqueKey?: string; importedFrom?: ImportedFrom } = {},
): Promise<{ laui: Laui; position: Position }> => {
  const planned = await planItem(deps, principal, body);
  const plan = planned.uniqueKey === null && options.uniqueKey !== undefined ? { ...planned, uniqueKey: options.uniqueKey } : planned;
  const now = new Date(metadata.at);
  const laui = newLaui(now);
  const stream = itemStream(laui);
  const events = itemCreationEvents({
    laui,
    itemType: plan.itemType,
    name: plan.name,
    parent: plan.parent ? { laui: plan.parent.laui, type: plan.parent.item_type } : null,
    fields: sealSecretFields(plan.itemType, plan.fields, deps.secrets),
    access: plan.access,
    metadata,
    ...(options.importedFrom ? { importedFrom: options.importedFrom } : {}),
    actor: actorOf(principal),
  });
  const result =
    plan.uniqueKey === null
      ? await deps.eventStore.append(stream, events, 'no_stream')
      : await reserveUniqueKeyAndCreate(deps.eventStore, { key: plan.uniqueKey, ownerStream: stream, conflictDetail: UNIQUE_KEY_EXISTS, metadata }, events);
  // A task is about to be run (create-and-run) and changed by every run: its stream's state is
  // known here, so its first change need not read it back.
  if (resolveItemType(plan.itemType)?.base === 'task') {
    itemStatesOf(deps.eventStore).set(stream, { revision: events.length - 1, state: events.reduce((state, event) => itemDecider.evolve(state, event as unknown as ItemEvent), itemDecider.initialState()) });
  }
  return { laui, position: result.position };
};

