import { conflict } from '../../shared/errors.ts';
import { isCronHeartbeatDead } from '../../shared/task/systemSettings.ts';
import { latestBeat } from '../../projections/cron/cronLiveness.ts';

/**
 * The project cron status machine of spec 3.3, kept in the project folder's `folder_metadata`
 * (cron_status, latest_heartbeat, start_date, stop_date, error). Pure: the caller passes the current
 * folder_metadata, the time, the newest ephemeral heartbeat and the project's interval.
 *
 *   (none|STOPPED|ERROR|STOP) --START--> STARTED --loop begins--> RUNNING --STOP--> STOP --loop ends--> STOPPED
 *   STARTED|RUNNING --unrecoverable error--> ERROR
 *
 * Decisions beyond the spec table:
 * - START while STARTED/RUNNING is 409 `Cron is already running for this project` unless the
 *   heartbeat is dead (older than 3 intervals): then the START takes over (a new start_date).
 *   START from STOP (a stop still finishing) restarts: the finishing loop sees STARTED and goes on.
 * - STOP while STARTED/RUNNING with a live heartbeat writes STOP (the loop finishes its cycle and
 *   writes STOPPED); with a dead heartbeat there is no executor to wait for, so it writes STOPPED.
 *   STOP from ERROR acknowledges the error: STOPPED (error kept). STOP of a cron that is not running
 *   (no status, STOPPED) changes nothing and still answers 200: stopping is idempotent.
 * - stop_date is null from START on and set on STOPPED and ERROR; error is null from START on.
 */

/** Statuses under which a scheduler loop should be alive for the project. */
export const ACTIVE_CRON_STATUSES: ReadonlyArray<string> = ['STARTED', 'RUNNING'];

export const CRON_ALREADY_RUNNING = 'Cron is already running for this project';

export type CronCommand =
  | { kind: 'start' }
  | { kind: 'stop' }
  /** The loop began (STARTED -> RUNNING). */
  | { kind: 'loop_began' }
  /** The loop saw STOP and ended (STOP -> STOPPED). */
  | { kind: 'loop_ended' }
  | { kind: 'loop_failed'; error: string };

export interface CronContext {
  now: Date;
  /** The newest ephemeral heartbeat of the project (null when none is known). */
  liveBeat: Date | null;
  intervalSeconds: number;
}

export type FolderMetadata = Record<string, unknown>;

export const cronStatusOf = (metadata: unknown): string | null => {
  const status = metadata !== null && typeof metadata === 'object' ? (metadata as FolderMetadata).cron_status : undefined;
  return typeof status === 'string' ? status : null;
};

/** Alive: an active status and a heartbeat (ephemeral or persisted) younger than 3 intervals. */
export const isCronAlive = (metadata: FolderMetadata, context: CronContext): boolean =>
  ACTIVE_CRON_STATUSES.includes(cronStatusOf(metadata) ?? '') &&
  !isCronHeartbeatDead(latestBeat(context.liveBeat, metadata.latest_heartbeat), context.now, context.intervalSeconds);

/** The folder_metadata fields to set, or null when the command changes nothing. Throws 409 on a running START. */
export function decideCron(command: CronCommand, metadata: FolderMetadata, context: CronContext): FolderMetadata | null {
  const status = cronStatusOf(metadata);
  const at = context.now.toISOString();
  const beating = !isCronHeartbeatDead(latestBeat(context.liveBeat, metadata.latest_heartbeat), context.now, context.intervalSeconds);
  switch (command.kind) {
    case 'start':
      if (status !== null && ACTIVE_CRON_STATUSES.includes(status) && beating) throw conflict(CRON_ALREADY_RUNNING);
      return { cron_status: 'STARTED', latest_heartbeat: at, start_date: at, stop_date: null, error: null };
    case 'stop':
      if (status !== null && ACTIVE_CRON_STATUSES.includes(status)) {
        return beating ? { cron_status: 'STOP' } : { cron_status: 'STOPPED', stop_date: at };
      }
      if (status === 'STOP' && !beating) return { cron_status: 'STOPPED', stop_date: at };
      if (status === 'ERROR') return { cron_status: 'STOPPED', stop_date: at };
      return null;
    case 'loop_began':
      return status === 'STARTED' ? { cron_status: 'RUNNING', latest_heartbeat: at } : null;
    case 'loop_ended':
      return status === 'STOP' ? { cron_status: 'STOPPED', latest_heartbeat: at, stop_date: at } : null;
    case 'loop_failed':
      return status !== null && ACTIVE_CRON_STATUSES.includes(status)
        ? { cron_status: 'ERROR', latest_heartbeat: at, stop_date: at, error: command.error }
        : null;
  }
}
