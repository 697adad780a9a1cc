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

/**
 * Sets a field as a literal or a spread would (an own, enumerable data property): a plain
 * assignment of `__proto__` (a key JSON.parse does produce) would set the document's prototype.
 */
const setField = (doc: ItemDoc, key: string, value: unknown): void => {
  if (key === '__proto__') Object.defineProperty(doc, key, { value, enumerable: true, writable: true, configurable: true });
  else doc[key] = value;
};

/**
 * A field change (an ItemChanged-like event) written into `target`, which is returned: the same
 * fields, values and key order as `{ ...doc, ...changes, updated_at, updated_by, version }` when
 * `target` is a copy of `doc` (a new key goes last in both; a key already there keeps its place).
 */
const applyChange = (target: ItemDoc, event: RecordedEvent): ItemDoc => {
  const payload = data(event);
  const changes = clampedChanges(payload.changes as Record<string, unknown>);
  for (const key in changes) setField(target, key, changes[key]);
  target.updated_at = event.metadata.at;
  target.updated_by = event.metadata.user_laui;
  target.version = Number(payload.version);
  target.pk = primaryKeyOf(target.item_type, target);
  return target;
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
    if (isItemChangeType(event.type)) return applyChange({ ...doc }, event);
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

/**
 * itemsProjection.evolve for a caller that owns `doc` (made by an earlier evolve and handed to no
 * one since): a field change is written into it instead of a copy. The as-of reader's folds are
 * such documents: a copy of a task's document per event was half of what following the log cost.
 * Every other event is evolve's (its result is then a new document, or `doc` itself unchanged).
 */
export const evolveOwned = (doc: ItemDoc | null, event: RecordedEvent): ItemDoc | null =>
  doc !== null && isItemChangeType(event.type) ? applyChange(doc, event) : itemsProjection.evolve(doc, event);
