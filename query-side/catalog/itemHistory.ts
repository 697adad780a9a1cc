import { isItemChangeType } from '../../shared/catalog/itemChanges.ts';
import { notFound } from '../../shared/errors.ts';
import type { EventStore, RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import { maskSealedFields } from '../../shared/item-types/secretFields.ts';

interface Revision {
  laui: Laui;
  item_laui: Laui;
  version: number;
  fields: Record<string, unknown>;
  created_at: string;
  created_by: Laui | null;
  updated_by: Laui | null;
}

const data = (event: RecordedEvent) => event.data as Record<string, unknown>;

/**
 * Revisions are folded from the item's own stream (DESIGN §3): version N is the item as the event
 * that produced N left it. Runtime-only updates between versions do not make revisions.
 */
const revisionsOf = (laui: Laui, events: RecordedEvent[]): Revision[] => {
  const revisions: Revision[] = [];
  let current: Revision | null = null;
  for (const event of events) {
    const payload = data(event);
    if (event.type === 'ItemCreated') {
      // imported_from is the creation's provenance (a marketplace import), not a field of the item: history shows it.
      const { fields, laui: _laui, version: _version, revision_laui: _revision, link_laui: _link, parent_type: _type, imported_from: _source, ...common } = payload;
      current = {
        laui: String(payload.revision_laui),
        item_laui: laui,
        version: Number(payload.version),
        fields: { ...(fields as Record<string, unknown>), ...common },
        created_at: event.metadata.at,
        created_by: event.metadata.user_laui,
        updated_by: event.metadata.user_laui,
      };
      revisions.push(current);
    } else if (isItemChangeType(event.type) && current) {
      const previous: Revision = current;
      const fields: Record<string, unknown> = { ...previous.fields, ...(payload.changes as Record<string, unknown>) };
      if (typeof payload.revision_laui === 'string') {
        current = { ...previous, laui: payload.revision_laui, version: Number(payload.version), fields, updated_by: event.metadata.user_laui, created_at: event.metadata.at };
        revisions.push(current);
      } else {
        current = { ...previous, fields };
      }
    }
  }
  return revisions;
};

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
