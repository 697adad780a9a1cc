import type { RecordedEvent } from '../event-store/EventStore.ts';
import type { Laui } from '../ids.ts';
import { isItemChangeType } from './itemChanges.ts';

/** One version of an item: its fields as the event that made the version left them (sealed values as stored). */
export interface Revision {
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
 * that produced N left it. Runtime-only updates between versions do not make revisions. Shared by
 * the revisions read (query side) and the restore of a revision (command side), so that both name
 * the same content by the same revision LAUI.
 */
export const revisionsOf = (laui: Laui, events: ReadonlyArray<RecordedEvent>): Revision[] => {
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
