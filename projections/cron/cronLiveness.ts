import type { Laui } from '../../shared/ids.ts';
import type { Collection, ReadStore } from '../../shared/read-store/ReadStore.ts';

/**
 * Cron heartbeats (spec 3.3, 4.5) are high-frequency liveness: one beat per scheduler cycle per
 * project. DESIGN §3 keeps such liveness out of the item streams, so beats go to this ephemeral
 * read-store collection instead of the event log: in memory in the embedded mode (a restart loses
 * them, and the restart resumes every started cron anyway), a shared MongoDB collection in the
 * distributed mode (so scheduler processes see each other's beats and take over dead crons).
 * The project's persisted `folder_metadata.latest_heartbeat` is written with each status change.
 */
export const CRON_LIVENESS = 'cron_liveness';

export interface CronBeatDoc {
  [field: string]: unknown;
  id: Laui;
  latest_heartbeat: string;
  /** The loop that beat: a takeover shows as a new owner. */
  owner: string;
}

export interface CronLiveness {
  beat(projectLaui: Laui, at: Date, owner: string): Promise<void>;
  last(projectLaui: Laui): Promise<{ at: Date; owner: string } | null>;
  forget(projectLaui: Laui): Promise<void>;
}

export const cronLiveness = (readStore: ReadStore): CronLiveness => {
  const beats: Collection<CronBeatDoc> = readStore.collection<CronBeatDoc>(CRON_LIVENESS);
  return {
    beat: (projectLaui, at, owner) => beats.put({ id: projectLaui, latest_heartbeat: at.toISOString(), owner }),
    async last(projectLaui) {
      const doc = await beats.get(projectLaui);
      return doc ? { at: new Date(doc.latest_heartbeat), owner: doc.owner } : null;
    },
    forget: (projectLaui) => beats.delete(projectLaui),
  };
};

/** The newer of the ephemeral beat and the persisted one: either proves the cron was alive then. */
export const latestBeat = (live: Date | null, persisted: unknown): Date | null => {
  const stored = typeof persisted === 'string' && !Number.isNaN(Date.parse(persisted)) ? new Date(persisted) : null;
  if (live === null) return stored;
  if (stored === null) return live;
  return live.getTime() >= stored.getTime() ? live : stored;
};
