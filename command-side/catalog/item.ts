import type { AccessMaps } from '../../shared/access/permissions.ts';
import type { DomainEvent } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import { isItemChangeType } from '../../shared/catalog/itemChanges.ts';
import type { CronEvent } from '../../shared/task/cronEvents.ts';
import type { ItemChangeData, TaskEvent } from '../../shared/task/taskEvents.ts';
import type { TaskChangeReason } from '../task/decide.ts';

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
      }
    >
  | DomainEvent<'ItemUpdated', ItemChangeData>
  | TaskEvent
  | CronEvent
  | DomainEvent<'ItemAccessChanged', { access: AccessMaps }>
  | DomainEvent<'ItemSoftDeleted', { at: string }>
  | DomainEvent<'ItemRestored', { at: string }>
  | DomainEvent<'ItemHardDeleted', { at: string }>;

export type ItemState =
  | { status: 'none' }
  | {
      status: 'live' | 'deleted' | 'hard_deleted';
      laui: Laui;
      itemType: string;
      name: string;
      parentLaui: Laui | null;
      fields: Record<string, unknown>;
      access: AccessMaps;
      version: number;
    };

export type ItemCommand =
  | {
      kind: 'create';
      laui: Laui;
      itemType: string;
      name: string;
      parentLaui: Laui | null;
      parentType: string | null;
      linkLaui: Laui | null;
      isRoot: boolean;
      fields: Record<string, unknown>;
      access: AccessMaps;
      revisionLaui: Laui;
    }
  | {
      kind: 'update';
      laui: Laui;
      /** Top-level fields to set, `name` and `description` included. */
      changes: Record<string, unknown>;
      versionedFields: ReadonlyArray<string>;
      expectedVersion: number | null;
      access: AccessMaps | null;
      revisionLaui: Laui;
      /** Apply only while the item's `state` is one of these (a stale transition is skipped). */
      onlyIfStateIn?: ReadonlyArray<string>;
      /**
       * Why a task changes when its state alone does not say it: the state table's row a `state`
       * change goes through (shared/task/transitions.ts), or a pre-action that skipped the run.
       */
      trigger?: TaskChangeReason;
    }
  | { kind: 'soft-delete'; laui: Laui; at: string }
  | { kind: 'hard-delete'; laui: Laui; at: string }
  | { kind: 'restore'; laui: Laui; at: string };

export const itemStream = (laui: Laui): string => `item-${laui}`;
export const itemNotFound = (laui: Laui): string => `Item not found with laui: ${laui}`;

/** The events that set fields of an item (ItemUpdated and the named task and cron changes): every fold applies them alike. */
export type ItemChangeEvent = Extract<ItemEvent, { data: ItemChangeData }>;

export const isItemChange = (event: ItemEvent): event is ItemChangeEvent => isItemChangeType(event.type);
