import { forbidden, notFound, unprocessable } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import { allowedChildren, isChildAllowed } from '../../shared/item-types/itemTypes.ts';
import { handleCommand, loadState } from '../kernel/handleCommand.ts';
import { reserveUniqueKey, uniqueKeyDecider, uniqueKeyStream } from '../kernel/uniqueKey.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { CatalogDeps } from './catalogDeps.ts';
import { itemNotFound } from './item.ts';
import { linkDecider, linkKey, linkStream } from './link.ts';

const live = async (deps: CatalogDeps, laui: Laui): Promise<ItemDoc> => {
  const item = await deps.items.get(laui);
  if (!item || item.is_deleted) throw notFound(itemNotFound(laui));
  return item;
};

/**
 * POST /catalog/create/link: EDIT on the parent and VIEW on the child. Linking a child to its
 * true parent returns the true-parent link; any other pair becomes a soft reference, created once
 * (a second request for the same pair returns the first link's LAUI).
 */
export const linkItems = async (
  deps: CatalogDeps,
  principal: Principal,
  request: { parent_laui: Laui; child_laui: Laui },
  metadata: EventMetadata,
): Promise<{ linkLaui: Laui; position: Position | null }> => {
  const parent = await live(deps, request.parent_laui);
  const child = await live(deps, request.child_laui);
  const principals = await deps.access.principals(principal);
  if (!(await deps.access.can(principal, parent, 'EDIT', principals)) || !(await deps.access.can(principal, child, 'VIEW', principals))) {
    throw forbidden();
  }
  if (!isChildAllowed(parent.item_type, child.item_type)) {
    throw unprocessable({
      message: `Item type ${child.item_type} is not allowed under ${parent.item_type}`,
      item_type_passed: child.item_type,
      allowed_item_types: allowedChildren(parent.item_type),
    });
  }
  if (child.parent_laui === parent.laui) {
    const [link] = await deps.links.find({ where: { child_laui: child.laui, true_parent: true }, limit: 1 });
    if (link) return { linkLaui: link.link_laui, position: null };
  }
  const key = linkKey(parent.laui, child.laui);
  const existing = await loadState(deps.eventStore, uniqueKeyStream(key), uniqueKeyDecider);
  if (existing.owner !== null) {
    const linkLaui = existing.owner.slice('link-'.length);
    const state = await loadState(deps.eventStore, existing.owner, linkDecider);
    if (state.status === 'live') return { linkLaui, position: null };
  }
  const linkLaui = newLaui(new Date(metadata.at));
  try {
    await reserveUniqueKey(deps.eventStore, { key, ownerStream: linkStream(linkLaui), conflictDetail: 'Link already exists', metadata });
  } catch (error) {
    // A concurrent request linked the same pair first: answer with its link.
    const winner = await loadState(deps.eventStore, uniqueKeyStream(key), uniqueKeyDecider);
    if (winner.owner !== null && winner.owner !== linkStream(linkLaui)) return { linkLaui: winner.owner.slice('link-'.length), position: null };
    throw error;
  }
  const result = await handleCommand({
    eventStore: deps.eventStore,
    streamId: linkStream(linkLaui),
    decider: linkDecider,
    command: {
      kind: 'create',
      data: {
        link_laui: linkLaui,
        parent_laui: parent.laui,
        child_laui: child.laui,
        parent_type: parent.item_type,
        child_type: child.item_type,
        true_parent: false,
      },
    },
    metadata,
  });
  return { linkLaui, position: result.position };
};
