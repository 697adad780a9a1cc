import { notFound, unprocessable } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import { resolveItemType } from '../../shared/item-types/itemTypes.ts';
import { sealSecretFields } from '../../shared/item-types/secretFields.ts';
import { revisionsOf } from '../../shared/catalog/itemRevisions.ts';
import type { CatalogDeps } from './catalogDeps.ts';
import { checkedItemAfter, onItem, withUniqueKeyOf } from './changeItem.ts';
import { requireSystemConfigRight } from './decide.ts';
import { actorOf, itemStream } from './item.ts';
import { PLACEMENT_FIELDS } from './placementRights.ts';

export interface RestoreRevisionRequest {
  item_laui: Laui;
  revision_laui: Laui;
  expected_version: number;
}

/**
 * What a restore brings back: the versioned fields of the revision (its content). Never the item's
 * identity, place or access (item_type, parent, project and account, access maps), nor its runtime
 * fields (a task's state): a versioned field the revision did not have yet is cleared (null).
 */
const contentOf = (versionedFields: ReadonlyArray<string>, revision: Record<string, unknown>, current: Record<string, unknown>): Record<string, unknown> => {
  const place: ReadonlyArray<string> = PLACEMENT_FIELDS;
  const content: Record<string, unknown> = {};
  for (const field of versionedFields) {
    if (place.includes(field)) continue;
    if (Object.hasOwn(revision, field)) content[field] = revision[field];
    else if (current[field] !== undefined && current[field] !== null) content[field] = null;
  }
  return content;
};

/**
 * POST /catalog/restore_revision: EDIT on the item. The revision is looked up in the item's own
 * stream (a revision of another item is not found there: 404). Its credentials are copied as the
 * log holds them, sealed: nothing is opened and sealed again (sealSecretFields passes sealed values
 * through and seals only a value stored before sealing existed). The item as it will be is checked
 * as an update checks it (schema, a task's schedule and references, the unique key).
 */
export const restoreRevision = async (deps: CatalogDeps, principal: Principal, request: RestoreRevisionRequest, metadata: EventMetadata): Promise<{ position: Position | null; version: number }> => {
  const item = await deps.access.require(principal, request.item_laui, 'EDIT');
  const definition = resolveItemType(item.item_type);
  if (!definition) throw unprocessable(`Item type ${item.item_type} is no longer supported`);
  const revision = revisionsOf(item.laui, await deps.eventStore.readStream(itemStream(item.laui))).find((candidate) => candidate.laui === request.revision_laui);
  if (!revision) throw notFound('Revision not found');
  const content = sealSecretFields(item.item_type, contentOf(definition.versionedFields, revision.fields, item), deps.secrets, item);
  // The decider refuses it too; checked first as well, or a refused restore would have reserved and released a key.
  requireSystemConfigRight(actorOf(principal), item.item_type, item, content);
  const merged = await checkedItemAfter(deps, principal, item, content);
  const result = await withUniqueKeyOf(deps, item, merged, metadata, () =>
    onItem(deps, metadata, {
      kind: 'restore-revision',
      actor: actorOf(principal),
      laui: item.laui,
      restored: { revisionLaui: revision.laui, version: revision.version, content },
      expectedVersion: request.expected_version,
      revisionLaui: newLaui(new Date(metadata.at)),
    }),
  );
  return { position: result.position, version: result.state.status === 'none' ? item.version : result.state.version };
};
