import type { EventMetadata } from '../events.ts';
import { cronEventOf, type CronStatusData } from '../task/cronEvents.ts';
import { EVENT_OF_TARGET_STATE, taskEventOf, type ItemChangeData, type TaskEventType } from '../task/taskEvents.ts';
import type { RecordedEvent } from './EventStore.ts';

/**
 * Schema versions and upcasting: the log is never rewritten, so an event written by an older
 * release is raised to its type's current schema when it is read, by every adapter, before any
 * fold, projection or reader sees it. Writers stamp `metadata.version` (the adapters do, from
 * CURRENT_SCHEMA_VERSIONS); an event without one was written before versions existed: version 1.
 *
 * Versions (docs/events.md lists every type):
 * - ItemUpdated 2: a catalog field edit only. At version 1 it also carried a task's lifecycle
 *   (`changes.state`, a cancellation request, the record of a skipping pre-action) and a
 *   project's cron status; those are read as the named events that carry them now (TaskQueued...,
 *   CronStarted...), the rest as version 2 with the same data.
 * - every other type: 1.
 * An optional field added to a type is no new version (nothing to upcast: an older event simply
 * lacks it, and every reader treats it as absent): ItemCreated's `imported_from`, written only by a
 * marketplace import, is one.
 */
export const CURRENT_SCHEMA_VERSIONS: Readonly<Record<string, number>> = { ItemUpdated: 2 };

export const currentSchemaVersion = (type: string): number => CURRENT_SCHEMA_VERSIONS[type] ?? 1;

/** The schema version an event was written with: `metadata.version`, else 1 (written before versions existed). */
export const recordedSchemaVersion = (metadata: EventMetadata): number => {
  const version = metadata.version;
  return typeof version === 'number' && Number.isInteger(version) && version >= 1 ? version : 1;
};

/** The metadata a writer stores with an event of `type`: its current schema version stamped. */
export const stampSchemaVersion = (type: string, metadata: EventMetadata): EventMetadata => ({ ...metadata, version: currentSchemaVersion(type) });

const withType = (event: RecordedEvent, type: string, data: object, version: number): RecordedEvent => ({
  ...event,
  type,
  data: data as RecordedEvent['data'],
  metadata: { ...event.metadata, version },
});

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A version-1 pre-action record that skipped its run: some pre-action did not pass (runHooks.ts). */
const skippedByPreActions = (changes: Record<string, unknown>): boolean => {
  const status = changes.actions_status;
  if (!isObject(status) || !Array.isArray(status.pre_actions)) return false;
  return status.pre_actions.some((entry) => isObject(entry) && entry.state !== 'success');
};

/**
 * The named task event a version-1 `ItemUpdated` carried, or null for a field edit. Told apart by
 * the shape each writer of the old release gave its change (it recorded no trigger):
 * - a `state` change is named after the state entered; into `scheduled` it is a reset (which also
 *   clears last_run_output) or else a released scheduler claim, as is a change of `state` alone
 *   back to success, error or timeout (worker outcomes always set retry_number too);
 * - `user_set_state: 'cancel'` alone is a cancellation request;
 * - `actions_status` alone with a pre-action that did not pass is a skipped run.
 */
const taskEventOfV1 = (changes: Record<string, unknown>): TaskEventType | null => {
  const keys = Object.keys(changes);
  const to = changes.state;
  if (typeof to === 'string') {
    if (to === 'scheduled') return 'last_run_output' in changes ? 'TaskReset' : 'TaskClaimReleased';
    if (keys.length === 1 && (to === 'success' || to === 'error' || to === 'timeout')) return 'TaskClaimReleased';
    return EVENT_OF_TARGET_STATE[to] ?? null;
  }
  if (changes.user_set_state === 'cancel') return 'TaskCancellationRequested';
  if (keys.length === 1 && skippedByPreActions(changes)) return 'TaskSkipped';
  return null;
};

/** ItemUpdated 1 -> a named task or cron event (version 1), else ItemUpdated 2 (same data). */
const upcastItemUpdatedV1 = (event: RecordedEvent): RecordedEvent => {
  // A row that is not a change record (a damaged or foreign event) is left as it is: nothing to read it as.
  if (!isObject(event.data)) return event;
  const data = event.data as unknown as ItemChangeData;
  const changes = isObject(data.changes) ? data.changes : {};
  const taskType = taskEventOfV1(changes);
  if (taskType !== null) {
    const to = typeof changes.state === 'string' ? changes.state : null;
    const named = taskEventOf(taskType, { from: null, to, changes, version: data.version, revision_laui: data.revision_laui });
    return withType(event, named.type, named.data, 1);
  }
  const metadata = changes.folder_metadata;
  const cron = Object.keys(changes).length === 1 && data.revision_laui === null && isObject(metadata) ? cronEventOf(metadata.cron_status) : null;
  if (cron !== null) {
    const cronData: CronStatusData = { from: null, to: String((metadata as Record<string, unknown>).cron_status), changes, version: data.version, revision_laui: null };
    return withType(event, cron, cronData, 1);
  }
  return withType(event, 'ItemUpdated', data, 2);
};

/**
 * The event in its type's current schema. The identity for every event written by this release
 * (one type comparison on the read path): only a version-1 ItemUpdated has an upcaster today.
 */
export const upcast = (event: RecordedEvent): RecordedEvent => {
  if (event.type !== 'ItemUpdated' || recordedSchemaVersion(event.metadata) >= 2) return event;
  return upcastItemUpdatedV1(event);
};
