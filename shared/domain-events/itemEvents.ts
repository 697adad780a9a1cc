import type { AccessMaps } from '../access/permissions.ts';
import type { DomainEvent } from '../events.ts';
import type { Laui } from '../ids.ts';
import type { CronEvent } from '../task/cronEvents.ts';
import type { ItemChangeData, TaskEvent } from '../task/taskEvents.ts';

/**
 * Where an item imported from a marketplace came from (POST /api/v1/marketplace/import): the
 * marketplace's base URL (MARKETPLACE_URL, which holds no credentials) and the item's id there.
 */
export interface ImportedFrom {
  marketplace_url: string;
  item_id: string;
}

/**
 * Events of `item-<laui>` streams: every catalog item, tasks included. Type-specific fields
 * travel in `fields`; `version` counts versioned-field changes and each version has a revision id.
 * A change is `ItemUpdated` (a field edit) or, for a task's lifecycle and a project's cron status,
 * a named event carrying the same change record (shared/task/taskEvents.ts, cronEvents.ts).
 */
export type ItemEvent =
  | DomainEvent<
      'ItemCreated',
      {
        laui: Laui;
        item_type: string;
        name: string;
        parent_laui: Laui | null;
        parent_type: string | null;
        /** Id of the true-parent link to parent_laui (null for roots). */
        link_laui: Laui | null;
        is_root: boolean;
        fields: Record<string, unknown>;
        access: AccessMaps;
        version: number;
        revision_laui: Laui;
        /**
         * Only on an item created by a marketplace import: its source. An optional field added
         * without a version bump: older events simply lack it, and every fold ignores it.
         */
        imported_from?: ImportedFrom;
      }
    >
  | DomainEvent<'ItemUpdated', ItemChangeData>
  | DomainEvent<'ItemRevisionRestored', ItemRevisionRestoredData>
  | TaskEvent
  | CronEvent
  | DomainEvent<'ItemAccessChanged', { access: AccessMaps }>
  | DomainEvent<'ItemSoftDeleted', { at: string }>
  | DomainEvent<'ItemRestored', { at: string }>
  | DomainEvent<'ItemHardDeleted', { at: string }>;

/**
 * POST /catalog/restore_revision: a new revision whose versioned fields are those of an earlier one.
 * It carries the change record of ItemUpdated (every fold applies it alike) and names the revision
 * restored, so that history says what was brought back and not only what changed.
 */
export type ItemRevisionRestoredData = ItemChangeData & {
  restored_revision_laui: Laui;
  restored_version: number;
};

/** The events that set fields of an item (ItemUpdated and the named task and cron changes): every fold applies them alike. */
export type ItemChangeEvent = Extract<ItemEvent, { data: ItemChangeData }>;
