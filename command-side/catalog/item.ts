import type { AccessMaps } from '../../shared/access/permissions.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import { isItemChangeType } from '../../shared/catalog/itemChanges.ts';
import type { TaskChangeReason } from './taskLifecycle.ts';
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

/**
 * Who asks for a change. The decider needs only whether they administer the service: a config item
 * of config_type `system` is service-wide settings, written by administrators alone (docs/decisions.md).
 */
export interface ItemActor {
  isAdmin: boolean;
}

/**
 * The changes of a task's lifecycle and of a project's cron status (changeTask, the scheduler, cron
 * manage), whoever caused them: they touch tasks and projects, never configs, so they carry no
 * administrator's rights, and a system config reached through them would be refused.
 */
export const SERVICE_ACTOR: ItemActor = Object.freeze({ isAdmin: false });

export const actorOf = (principal: Principal): ItemActor => ({ isAdmin: principal.isAdmin });

export type ItemCommand =
  | {
      kind: 'create';
      actor: ItemActor;
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
      actor: ItemActor;
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
  | {
      kind: 'restore-revision';
      actor: ItemActor;
      laui: Laui;
      /** The revision brought back and its content: the versioned fields as it stored them (sealed values sealed). */
      restored: { revisionLaui: Laui; version: number; content: Record<string, unknown> };
      /** The item's version the caller saw: another one is a stale restore (409). */
      expectedVersion: number;
      /** The new revision's id. */
      revisionLaui: Laui;
    }
  | { kind: 'soft-delete'; actor: ItemActor; laui: Laui; at: string }
  | { kind: 'hard-delete'; actor: ItemActor; laui: Laui; at: string }
  | { kind: 'restore'; actor: ItemActor; laui: Laui; at: string };

export const itemStream = (laui: Laui): string => `item-${laui}`;
export const itemNotFound = (laui: Laui): string => `Item not found with laui: ${laui}`;

export const isItemChange = (event: ItemEvent): event is ItemChangeEvent => isItemChangeType(event.type);
