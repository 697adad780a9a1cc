import { isItemChangeType, ITEM_CHANGE_TYPES } from '../../shared/catalog/itemChanges.ts';
import type { AccessMaps } from '../../shared/access/permissions.ts';
import type { RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import { primaryKeyOf } from '../../shared/item-types/primaryKey.ts';
import type { Projection } from '../runner/Projection.ts';
import { clampDepth } from '../../shared/validation/jsonDepth.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';

export const ITEMS = 'items';

const data = (event: RecordedEvent) => event.data as Record<string, unknown>;

/**
 * Field values are clamped to JSON_MAX_DEPTH: the body parser refuses deeper bodies, but a log
 * written before it did (or a task output) may hold one, and a document nested thousands deep
 * overflows the stack of every read that serialises it (listing its folder, searching its type).
 * The usual value is returned as it is after one bounded walk.
 */
const clampedChanges = (changes: Record<string, unknown>): Record<string, unknown> => {
  let copy: Record<string, unknown> | null = null;
  for (const key in changes) {
    const value = changes[key];
    const clamped = clampDepth(value);
    if (clamped !== value) Object.defineProperty((copy ??= { ...changes }), key, { value: clamped, enumerable: true, writable: true, configurable: true });
  }
  return copy ?? changes;
};

export const itemsProjection: Projection<ItemDoc> = {
  name: 'items',
  collection: ITEMS,
  indexes: [
    { fields: ['parent_laui'] },
    { fields: ['item_type'] },
    { fields: ['is_root'] },
    { fields: ['name'] },
    { fields: ['pk'] },
    { fields: ['item_type', 'name'] },
    { fields: ['project_laui'] },
    // The lease reaper's busy connections: only they are indexed, not a million items without a queue.
    { fields: ['queue_active'], partial: { queue_active: true } },
    // The scheduler's cycle: due tasks by next_run_date, tasks by state and unscheduled ones per
    // project. Partial on tasks: every other item would sit in their null buckets.
    { fields: ['next_run_date'], ordered: true },
    { fields: ['project_laui', 'state'], partial: { item_type: 'task' } },
    { fields: ['project_laui', 'next_run_date'], partial: { item_type: 'task' } },
  ],
  handles: new Set(['ItemCreated', ...ITEM_CHANGE_TYPES, 'ItemAccessChanged', 'ItemSoftDeleted', 'ItemRestored', 'ItemHardDeleted']),
  documentId: (event) => (event.streamId.startsWith('item-') ? event.streamId.slice('item-'.length) : null),
  evolve: (doc, event) => {
    const at = event.metadata.at;
    const by = event.metadata.user_laui;
    const payload = data(event);
    if (event.type === 'ItemCreated') {
      // One literal of the common fields, then the type fields assigned in place: two spreads of a
      // twenty-field object made rebuilds allocation-bound (this runs a million times at start).
      const created: ItemDoc = {
        id: String(payload.laui),
        laui: String(payload.laui),
        item_type: String(payload.item_type),
        name: String(payload.name),
        parent_laui: (payload.parent_laui as Laui | null) ?? null,
        is_root: payload.is_root === true,
        access: payload.access as AccessMaps,
        created_at: at,
        updated_at: at,
        deleted_at: null,
        is_deleted: false,
        created_by: by,
        updated_by: by,
        version: Number(payload.version),
        pk: '',
        created_seq: Number(event.position),
      };
      const fields = payload.fields as Record<string, unknown>;
      for (const key in fields) if (!(key in created)) created[key] = clampDepth(fields[key]);
      created.pk = primaryKeyOf(created.item_type, created);
      return created;
    }
    if (!doc) return null;
    // A field edit and a task's or project's named change (TaskStarted, CronStopped...) set fields alike.
    if (isItemChangeType(event.type)) {
      const updated = { ...doc, ...clampedChanges(payload.changes as Record<string, unknown>), updated_at: at, updated_by: by, version: Number(payload.version) };
      updated.pk = primaryKeyOf(updated.item_type, updated);
      return updated;
    }
    switch (event.type) {
      case 'ItemAccessChanged':
        return { ...doc, access: payload.access as AccessMaps, updated_at: at, updated_by: by };
      case 'ItemSoftDeleted':
        return { ...doc, deleted_at: String(payload.at), is_deleted: true, updated_at: at, updated_by: by };
      case 'ItemRestored':
        return { ...doc, deleted_at: null, is_deleted: false, updated_at: at, updated_by: by };
      case 'ItemHardDeleted':
        return null;
      default:
        return doc;
    }
  },
};
