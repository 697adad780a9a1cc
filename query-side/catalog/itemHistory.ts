import { isItemChangeType } from '../../shared/catalog/itemChanges.ts';
import { notFound } from '../../shared/errors.ts';
import type { EventStore, RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import { maskSealedFields } from '../../shared/item-types/secretFields.ts';
import { revisionsOf } from '../../shared/catalog/itemRevisions.ts';

const data = (event: RecordedEvent) => event.data as Record<string, unknown>;

const liveEvents = async (eventStore: EventStore, laui: Laui): Promise<RecordedEvent[]> => {
  const events = await eventStore.readStream(`item-${laui}`);
  if (events.length === 0 || events.some((event) => event.type === 'ItemHardDeleted')) throw notFound('Item not found');
  return events;
};

/** GET /catalog/get/item_revisions: the list, or one revision with `version`. */
export const itemRevisions = async (eventStore: EventStore, laui: Laui, version: number | undefined, reader: 'viewer' | 'stranger' = 'stranger') => {
  const revisions = revisionsOf(laui, await liveEvents(eventStore, laui));
  if (version === undefined) return revisions.map((revision) => ({ laui: revision.laui, item_laui: laui, version: revision.version }));
  const revision = revisions.find((candidate) => candidate.version === version);
  if (!revision) throw notFound('Revision not found');
  return {
    ...maskSealedFields({ ...revision.fields }, reader),
    version: revision.version,
    laui: revision.laui,
    item_laui: laui,
    created_at: revision.created_at,
    created_by: revisions[0]?.created_by ?? null,
    updated_by: revision.updated_by,
  };
};

/** GET /catalog/get/item_history: every event of the item, who and when, with the fields it changed. */
export const itemHistory = async (eventStore: EventStore, laui: Laui) => {
  const events = await eventStore.readStream(`item-${laui}`);
  if (events.length === 0) throw notFound(`Item not found with laui: ${laui}`);
  return events.map((event) => {
    const payload = data(event);
    const changed =
      event.type === 'ItemCreated'
        ? ['name', ...Object.keys(payload.fields as Record<string, unknown>)]
        : isItemChangeType(event.type)
          ? Object.keys(payload.changes as Record<string, unknown>)
          : event.type === 'ItemAccessChanged'
            ? ['access']
            : event.type === 'ItemSoftDeleted' || event.type === 'ItemRestored'
              ? ['deleted_at']
              : [];
    return {
      revision: event.revision,
      event: event.type,
      at: event.metadata.at,
      user_laui: event.metadata.user_laui,
      version: typeof payload.version === 'number' ? payload.version : null,
      changed_fields: changed,
      changes:
        isItemChangeType(event.type)
          ? maskSealedFields({ ...(payload.changes as Record<string, unknown>) })
          : event.type === 'ItemAccessChanged'
            ? { access: payload.access }
            : undefined,
      // An item created by a marketplace import names its source on its creation (absent otherwise).
      ...(event.type === 'ItemCreated' && payload.imported_from !== undefined ? { imported_from: payload.imported_from } : {}),
    };
  });
};
