import { isDeepStrictEqual } from 'node:util';
import { assertNever } from '../../shared/assertNever.ts';
import { badRequest, conflict, forbidden, notFound, unprocessable } from '../../shared/errors.ts';
import type { Decider } from '../kernel/Decider.ts';
import { resolveItemType } from '../../shared/item-types/itemTypes.ts';
import { decideTaskChange, type TaskLifecycle } from './taskLifecycle.ts';
import { backfillMarkAfter, NO_BACKFILL } from '../../shared/task/backfill/backfillRun.ts';
import { evolveItem, initialItemState } from './evolve.ts';
import { itemNotFound, type ItemActor, type ItemCommand, type ItemState } from './item.ts';
import { isSystemConfig } from '../../shared/task/systemSettings.ts';
import { INITIAL_STATE } from '../../shared/task/transitions.ts';
import { scheduleProblem } from '../../shared/task/validateTask.ts';
import type { ItemEvent } from '../../shared/domain-events/itemEvents.ts';

const SCHEDULE_FIELDS = ['frequency', 'start_date', 'end_date'];

const isTask = (state: Extract<ItemState, { laui: string }>): boolean => resolveItemType(state.itemType)?.base === 'task';

/** The task aggregate's view of a task item (command-side/task/decide.ts). */
const lifecycleOf = (state: Extract<ItemState, { laui: string }>): TaskLifecycle => ({
  state: String(state.fields.state ?? INITIAL_STATE),
  userSetState: typeof state.fields.user_set_state === 'string' ? state.fields.user_set_state : null,
  backfill: backfillMarkAfter(state.fields, NO_BACKFILL),
});

const requireVersion = (expected: number, state: Extract<ItemState, { laui: string }>): void => {
  if (expected !== state.version) throw conflict(`Item version conflict: expected version ${expected}, current version ${state.version}`);
};

/**
 * The fields of `wanted` whose value differs from the state's, compared field by field without a
 * merged copy of the state (every task transition comes through here, and a task has some fifty
 * fields). Two changes at once may each leave a runnable schedule and together not (one sets a
 * cron, the other clears the dates): a task's schedule is checked here too, on the stream's state.
 */
const changedFields = (wanted: Record<string, unknown>, state: Extract<ItemState, { laui: string }>): Record<string, unknown> => {
  const changes: Record<string, unknown> = {};
  for (const field in wanted) {
    const value = wanted[field];
    const current = field === 'name' ? state.name : state.fields[field];
    const same = Object.is(current, value) || (typeof value === 'object' && value !== null && typeof current === 'object' && current !== null && isDeepStrictEqual(current, value));
    if (!same) changes[field] = value;
  }
  if (isTask(state) && SCHEDULE_FIELDS.some((field) => Object.hasOwn(changes, field))) {
    const problem = scheduleProblem({ ...state.fields, ...changes });
    if (problem !== null) throw unprocessable(problem);
  }
  return changes;
};

/**
 * A restore is always a new revision, even when the content is already the restored one: the
 * caller asked for that revision to be current and history records that it was brought back.
 */
const decideRestoreRevision = (command: Extract<ItemCommand, { kind: 'restore-revision' }>, state: Extract<ItemState, { laui: string }>): ItemEvent[] => {
  requireVersion(command.expectedVersion, state);
  return [
    {
      type: 'ItemRevisionRestored',
      data: {
        changes: changedFields(command.restored.content, state),
        version: state.version + 1,
        revision_laui: command.revisionLaui,
        restored_revision_laui: command.restored.revisionLaui,
        restored_version: command.restored.version,
      },
    },
  ];
};

const decideUpdate = (command: Extract<ItemCommand, { kind: 'update' }>, state: Extract<ItemState, { laui: string }>): ItemEvent[] => {
  if (command.onlyIfStateIn && !command.onlyIfStateIn.includes(String(state.fields.state))) return [];
  if (command.expectedVersion !== null) requireVersion(command.expectedVersion, state);
  const changes = changedFields(command.changes, state);
  const events: ItemEvent[] = [];
  if (Object.keys(changes).length > 0) {
    const versioned = Object.keys(changes).some((field) => command.versionedFields.includes(field));
    const version = versioned ? state.version + 1 : state.version;
    const revisionLaui = versioned ? command.revisionLaui : null;
    // A task's lifecycle change is the task aggregate's named event (which refuses, 409, a state
    // change the table does not allow); anything else is a field edit.
    const named = isTask(state) ? decideTaskChange({ changes, version, revisionLaui, reason: command.trigger }, lifecycleOf(state)) : [];
    events.push(...(named.length > 0 ? named : [{ type: 'ItemUpdated' as const, data: { changes, version, revision_laui: revisionLaui } }]));
  }
  if (command.access !== null && !isDeepStrictEqual(command.access, state.access)) {
    events.push({ type: 'ItemAccessChanged', data: { access: command.access } });
  }
  return events;
};

/**
 * A system config's content is every user's settings (a timeout one user sets ends another's runs),
 * so only administrators create one, turn a config into one, or change, delete or restore one: 403
 * `Access denied` for anyone else, whatever their rights on the item (docs/decisions.md). Each of
 * `fieldSets` is one view of the item (as it is, as it would be); any of them being a system config counts.
 */
export const requireSystemConfigRight = (actor: ItemActor, itemType: string, ...fieldSets: ReadonlyArray<Record<string, unknown>>): void => {
  if (!actor.isAdmin && fieldSets.some((fields) => isSystemConfig(itemType, fields))) throw forbidden();
};

/**
 * Pure decisions on one item; schema, hierarchy and access checks happen before, in the handler. The
 * system-config rule is here, on the stream's state, so that every route and any later one obeys it.
 */
export const decideItem = (command: ItemCommand, state: ItemState): ItemEvent[] => {
  if (command.kind === 'create') {
    if (state.status !== 'none') throw conflict('Item already exists');
    requireSystemConfigRight(command.actor, command.itemType, command.fields);
    return [
      {
        type: 'ItemCreated',
        data: {
          laui: command.laui,
          item_type: command.itemType,
          name: command.name,
          parent_laui: command.parentLaui,
          parent_type: command.parentType,
          link_laui: command.linkLaui,
          is_root: command.isRoot,
          fields: command.fields,
          access: command.access,
          version: 1,
          revision_laui: command.revisionLaui,
          // Written only for an import: every other ItemCreated reads as before.
          ...(command.importedFrom ? { imported_from: { marketplace_url: command.importedFrom.marketplace_url, item_id: command.importedFrom.item_id } } : {}),
        },
      },
    ];
  }
  if (state.status === 'none' || state.status === 'hard_deleted') throw notFound(itemNotFound(command.laui));
  requireSystemConfigRight(command.actor, state.itemType, state.fields, command.kind === 'update' ? command.changes : command.kind === 'restore-revision' ? command.restored.content : {});
  switch (command.kind) {
    case 'update':
      if (state.status === 'deleted') throw badRequest('Invalid argument: the item is deleted; restore it before updating');
      return decideUpdate(command, state);
    case 'restore-revision':
      if (state.status === 'deleted') throw badRequest('Invalid argument: the item is deleted; restore it before updating');
      return decideRestoreRevision(command, state);
    case 'soft-delete':
      return state.status === 'deleted' ? [] : [{ type: 'ItemSoftDeleted', data: { at: command.at } }];
    case 'hard-delete':
      return [{ type: 'ItemHardDeleted', data: { at: command.at } }];
    case 'restore':
      return state.status === 'live' ? [] : [{ type: 'ItemRestored', data: { at: command.at } }];
    default:
      return assertNever(command);
  }
};

export const itemDecider: Decider<ItemState, ItemCommand, ItemEvent> = {
  initialState: initialItemState,
  evolve: evolveItem,
  decide: decideItem,
};
