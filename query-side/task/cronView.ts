import { isCronHeartbeatDead, projectSchedulerInterval, type SystemSettings } from '../../shared/task/systemSettings.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { latestBeat, type CronLiveness } from '../../projections/cron/cronLiveness.ts';

export interface CronView {
  project_laui: string;
  cron_status: string | null;
  /** The newest heartbeat: the ephemeral one of a live loop, else the one persisted with the last status change. */
  latest_heartbeat: string | null;
  start_date: string | null;
  stop_date: string | null;
  error: string | null;
  /** STARTED or RUNNING with a heartbeat younger than 3 intervals (spec 4.5). */
  alive: boolean;
  interval_seconds: number;
}

const ACTIVE = ['STARTED', 'RUNNING'];
const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** The project's cron as clients should see it: the persisted status with the live heartbeat. */
export const cronViewOf = async (deps: { liveness: CronLiveness; now: Date; settings: SystemSettings }, project: ItemDoc): Promise<CronView> => {
  const metadata = (project.folder_metadata as Record<string, unknown> | undefined) ?? {};
  const intervalSeconds = projectSchedulerInterval(deps.settings, project.name);
  const beat = latestBeat((await deps.liveness.last(project.laui))?.at ?? null, metadata.latest_heartbeat);
  const status = text(metadata.cron_status);
  return {
    project_laui: project.laui,
    cron_status: status,
    latest_heartbeat: beat === null ? null : beat.toISOString(),
    start_date: text(metadata.start_date),
    stop_date: text(metadata.stop_date),
    error: text(metadata.error),
    alive: status !== null && ACTIVE.includes(status) && !isCronHeartbeatDead(beat, deps.now, intervalSeconds),
    interval_seconds: intervalSeconds,
  };
};
