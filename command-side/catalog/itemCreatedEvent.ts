import type { EventMetadata, EventToAppend } from '../../shared/events.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import type { AccessMaps } from '../../shared/access/permissions.ts';
import { applyDefaults } from '../../shared/item-types/itemTypes.ts';
import { itemDecider } from './decide.ts';
import { type ItemActor } from './item.ts';
import type { ImportedFrom } from '../../shared/domain-events/itemEvents.ts';

interface NewItem {
  laui: Laui;
  itemType: string;
  name: string;
  parent: { laui: Laui; type: string } | null;
  fields: Record<string, unknown>;
  access: AccessMaps;
  metadata: EventMetadata;
  /** A marketplace import's source (recorded on ItemCreated). */
  importedFrom?: ImportedFrom;
  /** Who creates it (a system config needs an administrator). */
  actor: ItemActor;
}

/**
 * The events that create a new item, decided on the initial state: a fresh LAUI names a stream that
 * cannot exist yet, so the decision needs no read. Catalog create appends them; `fields` are taken
 * as given (create has validated, defaulted and sealed them).
 */
export const itemCreationEvents = (item: NewItem): EventToAppend[] => {
  const at = new Date(item.metadata.at);
  return itemDecider
    .decide(
      {
        kind: 'create',
        actor: item.actor,
        laui: item.laui,
        itemType: item.itemType,
        name: item.name,
        parentLaui: item.parent?.laui ?? null,
        parentType: item.parent?.type ?? null,
        linkLaui: item.parent ? newLaui(at) : null,
        isRoot: item.parent === null,
        fields: item.fields,
        access: item.access,
        revisionLaui: newLaui(at),
        ...(item.importedFrom ? { importedFrom: item.importedFrom } : {}),
      },
      itemDecider.initialState(),
    )
    .map((event) => ({ type: event.type, data: event.data, metadata: item.metadata }));
};

/**
 * The ItemCreated event catalog create decides for an item (defaults applied, no checks), for code
 * that seeds a log directly: benchmarks and fixtures writing thousands of items in bulk. Made by the
 * decider itself, so a seeded log is exactly what the API would have written. No checks means no
 * rights either: it decides as an administrator would (a fixture may seed a system config).
 */
export const itemCreatedEvent = (item: Omit<NewItem, 'actor'>): EventToAppend => {
  const [event] = itemCreationEvents({ ...item, fields: applyDefaults(item.itemType, item.fields), actor: { isAdmin: true } });
  if (!event) throw new Error('catalog create decided no event');
  return event;
};
