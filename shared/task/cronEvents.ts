import type { DomainEvent } from '../events.ts';
import type { ItemChangeData } from './taskEvents.ts';

/**
 * A project's cron status changes (its `folder_metadata.cron_status`, spec 4.3), named after what
 * happened rather than stored as a field diff. They carry the change record of `ItemUpdated` (the
 * new folder_metadata), so the folds of an item apply them alike.
 */
export const CRON_EVENT_OF_STATUS = {
  STARTED: 'CronStarted',
  RUNNING: 'CronLoopStarted',
  STOP: 'CronStopRequested',
  STOPPED: 'CronStopped',
  ERROR: 'CronFailed',
} as const;

export type CronEventType = (typeof CRON_EVENT_OF_STATUS)[keyof typeof CRON_EVENT_OF_STATUS];

export const CRON_EVENT_TYPES: readonly CronEventType[] = Object.values(CRON_EVENT_OF_STATUS);

export type CronStatusData = ItemChangeData & {
  /** The status left (null when none was set, or unknown on an event upcast from the release before named events). */
  from: string | null;
  to: string;
};

export type CronEvent = DomainEvent<CronEventType, CronStatusData>;

/** The event of a change into cron status `to`, or null for a value that is not a cron status. */
export const cronEventOf = (to: unknown): CronEventType | null =>
  typeof to === 'string' && Object.hasOwn(CRON_EVENT_OF_STATUS, to) ? CRON_EVENT_OF_STATUS[to as keyof typeof CRON_EVENT_OF_STATUS] : null;
