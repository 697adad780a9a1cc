import { CRON_EVENT_TYPES } from '../task/cronEvents.ts';
import { TASK_EVENT_TYPES } from '../task/taskEvents.ts';

/**
 * The event types that set fields of an item: `ItemUpdated` (a field edit) and the named changes of
 * a task's lifecycle and a project's cron status, which carry the same change record
 * (`changes`, `version`, `revision_laui`). Every fold of an item (its aggregate, the catalog read
 * model, revisions, history) applies them alike, so a new named change needs no new fold.
 */
export const ITEM_CHANGE_TYPES: ReadonlySet<string> = new Set<string>(['ItemUpdated', 'ItemRevisionRestored', ...TASK_EVENT_TYPES, ...CRON_EVENT_TYPES]);

export const isItemChangeType = (type: string): boolean => ITEM_CHANGE_TYPES.has(type);
