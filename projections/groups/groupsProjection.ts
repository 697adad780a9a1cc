import { assertNever } from '../../shared/assertNever.ts';
import type { RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import type { AccessMaps } from '../../shared/access/permissions.ts';
import type { GroupEvent } from '../../shared/domain-events/groupEvents.ts';
import type { Projection } from '../runner/Projection.ts';

/** The groups read model (spec 2.7), one document per live group; a deleted group is removed. */
export interface GroupDoc {
  [field: string]: unknown;
  id: Laui;
  laui: Laui;
  name: string;
  /** Lower-cased name, for a case-insensitive lookup by name. */
  name_key: string;
  description: string;
  access: AccessMaps;
  created_at: string;
  updated_at: string;
}

export const GROUPS = 'groups';

export const GROUP_EVENT_TYPES: ReadonlySet<GroupEvent['type']> = new Set([
  'GroupCreated',
  'GroupDescriptionChanged',
  'GroupAccessGranted',
  'GroupAccessRevoked',
  'GroupDeleted',
]);

export const groupLauiOf = (event: RecordedEvent): Laui | null =>
  event.streamId.startsWith('group-') ? event.streamId.slice('group-'.length) : null;

export const groupsProjection: Projection<GroupDoc> = {
  name: 'groups',
  collection: GROUPS,
  // Not unique: between a deletion and a re-creation of one name the log order already keeps one.
  indexes: [{ fields: ['name_key'] }],
  handles: GROUP_EVENT_TYPES,
  documentId: groupLauiOf,
  evolve: (doc, recorded) => {
    const event = { type: recorded.type, data: recorded.data } as GroupEvent;
    const at = recorded.metadata.at;
    switch (event.type) {
      case 'GroupCreated':
        return {
          id: event.data.laui,
          laui: event.data.laui,
          name: event.data.name,
          name_key: event.data.name.toLowerCase(),
          description: event.data.description,
          access: { owners: {}, editors: {}, viewers: {} },
          created_at: at,
          updated_at: at,
        };
      case 'GroupDescriptionChanged':
        return doc && { ...doc, description: event.data.description, updated_at: at };
      case 'GroupAccessGranted': {
        if (!doc) return doc;
        const { role, principal_laui } = event.data;
        return { ...doc, access: { ...doc.access, [role]: { ...doc.access[role], [principal_laui]: 'true' } }, updated_at: at };
      }
      case 'GroupAccessRevoked': {
        if (!doc) return doc;
        const { role, principal_laui } = event.data;
        const { [principal_laui]: _removed, ...rest } = doc.access[role];
        return { ...doc, access: { ...doc.access, [role]: rest }, updated_at: at };
      }
      case 'GroupDeleted':
        return null;
      default:
        return assertNever(event);
    }
  },
};
