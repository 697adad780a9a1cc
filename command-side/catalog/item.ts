import type { AccessMaps } from '../../shared/access/permissions.ts';
import type { Laui } from '../../shared/ids.ts';
import { isItemChangeType } from '../../shared/catalog/itemChanges.ts';
import type { TaskChangeReason } from '../task/decide.ts';
import type { ImportedFrom, ItemEvent, ItemChangeEvent } from '../../shared/domain-events/itemEvents.ts';

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
      /** A marketplace import: the source, recorded on the ItemCreated event. */
      importedFrom?: ImportedFrom;
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

export const isItemChange = (event: ItemEvent): event is ItemChangeEvent => isItemChangeType(event.type);
