import type { EventMetadata, EventToAppend } from '../../shared/events.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import type { AccessMaps } from '../../shared/access/permissions.ts';
import { applyDefaults } from '../../shared/item-types/itemTypes.ts';
import { itemDecider } from './decide.ts';

/**
 * The ItemCreated event catalog create decides for an item (defaults applied, no checks), for code
 * that seeds a log directly: benchmarks and fixtures writing thousands of items in bulk. Made by the
 * decider itself, so a seeded log is exactly what the API would have written.
 */
export const itemCreatedEvent = (args: {
  laui: Laui;
  itemType: string;
  name: string;
  parent: { laui: Laui; type: string } | null;
  fields: Record<string, unknown>;
  access: AccessMaps;
  metadata: EventMetadata;
}): EventToAppend => {
  const at = new Date(args.metadata.at);
  const [event] = itemDecider.decide(
    {
      kind: 'create',
      laui: args.laui,
      itemType: args.itemType,
      name: args.name,
      parentLaui: args.parent?.laui ?? null,
      parentType: args.parent?.type ?? null,
      linkLaui: args.parent ? newLaui(at) : null,
      isRoot: args.parent === null,
      fields: applyDefaults(args.itemType, args.fields),
      access: args.access,
      revisionLaui: newLaui(at),
    },
    itemDecider.initialState(),
  );
  if (!event) throw new Error('catalog create decided no event');
  return { type: event.type, data: event.data, metadata: args.metadata };
};
