import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { metadataFor } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import { isCronHeartbeatDead, projectSchedulerInterval } from '../../shared/task/systemSettings.ts';
import type { ItemDoc } from '../../projections/catalog/itemsProjection.ts';
import { loadSystemSettings } from '../task/taskDeps.ts';
import { changeCronStatus } from './changeCronStatus.ts';
import { ACTIVE_CRON_STATUSES, cronStatusOf } from './cronLifecycle.ts';
import { ProjectCronLoop } from './ProjectCronLoop.ts';
import type { CronDeps } from './schedulerCycle.ts';

export interface CronScheduler {
  /** Resumes every started cron and supervises from then on. */
  start(): void;
  /** Ends every loop of this process (the crons stay STARTED/RUNNING and resume at the next start). */
  stop(): Promise<void>;
  /** A supervisor pass now (after a START), instead of at the next tick. */
  wake(): void;
  /** After a STOP: this process's loop of the project makes its final pass (writing STOPPED). */
  settle(projectLaui: Laui): Promise<void>;
}

export interface CronSchedulerOptions {
  /** How often the supervisor looks for crons without a live loop. */
  superviseMs?: number;
  /** Prefix of this process's loop owner ids (tests run two schedulers in one process). */
  ownerPrefix?: string;
}

/**
 * The supervisor: every `superviseMs` it lists the project folders and, for each cron that is
 * STARTED or RUNNING without a live loop (no ephemeral heartbeat younger than 3 intervals, spec 4.5),
 * starts one here. That covers a new START, resuming after a restart (the ephemeral heartbeats are
 * gone, so every started cron is picked up at once) and taking over a loop that stopped beating
 * (a local one is abandoned first). A STOP whose loop is dead is completed here (STOPPED).
 * In the embedded mode every loop lives in this one process.
 */
export const createCronScheduler = (deps: CronDeps, options: CronSchedulerOptions = {}): CronScheduler => {
  const superviseMs = options.superviseMs ?? 1000;
  const prefix = options.ownerPrefix ?? `${hostname()}:${process.pid}`;
  const loops = new Map<Laui, ProjectCronLoop>();
  let timer: NodeJS.Timeout | null = null;
  let passing: Promise<void> = Promise.resolve();
  let started = false;

  const log = (level: 'info' | 'warning' | 'error', message: string, projectLaui?: Laui) =>
    deps.logger.log({ level, category: 'CRON', step: 'supervise', message, ...(projectLaui ? { project_laui: projectLaui } : {}) });

  const superviseProject = async (project: ItemDoc, intervalSeconds: number): Promise<void> => {
    const status = cronStatusOf(project.folder_metadata);
    if (status === null || (status !== 'STOP' && !ACTIVE_CRON_STATUSES.includes(status))) return;
    const now = deps.clock.now();
    const beat = await deps.liveness.last(project.laui);
    const dead = isCronHeartbeatDead(beat?.at ?? null, now, intervalSeconds);
    const local = loops.get(project.laui);
    if (status === 'STOP') {
      // No loop beats for it anywhere: nothing is left to finish, so the stop is complete.
      if (!local && dead) {
        await changeCronStatus(deps.eventStore, project.laui, { kind: 'loop_ended' }, { now, liveBeat: null, intervalSeconds }, metadataFor(null, now, `cron-${project.laui}`));
      }
      return;
    }
    if (local && !local.isEnded && !dead) return;
    if (!local && !dead) return; // A loop of another process is beating.
    if (local) {
      log('warning', `Cron loop ${local.owner} stopped beating; taking over`, project.laui);
      void local.abandon();
    } else if (beat) {
      log('warning', `Cron loop ${beat.owner} is dead (heartbeat ${beat.at.toISOString()}); taking over`, project.laui);
    }
    const loop = new ProjectCronLoop(deps, project.laui, `${prefix}:${randomUUID()}`, (ended) => {
      if (loops.get(ended.projectLaui) === ended) loops.delete(ended.projectLaui);
    });
    loops.set(project.laui, loop);
    // Counted as a beat now, so the next supervisor pass does not take over a loop still starting.
    await deps.liveness.beat(project.laui, now, loop.owner);
    loop.start();
    log('info', `Cron loop ${loop.owner} started (${status})`, project.laui);
  };

  const supervise = async (): Promise<void> => {
    const settings = await loadSystemSettings(deps.items);
    const projects = await deps.items.find({ where: { item_type: 'folder.project', is_deleted: false } });
    for (const project of projects) {
      if (!started) return;
      try {
        await superviseProject(project, projectSchedulerInterval(settings, project.name));
      } catch (error) {
        log('error', `Supervising the cron failed: ${error instanceof Error ? error.message : String(error)}`, project.laui);
      }
    }
  };

  const pass = (): void => {
    passing = passing.then(supervise).catch((error: unknown) => log('error', `Cron supervisor failed: ${String(error)}`));
  };

  return {
    start() {
      if (started) return;
      started = true;
      pass();
      timer = setInterval(pass, superviseMs);
      timer.unref();
    },
    async stop() {
      started = false;
      if (timer) clearInterval(timer);
      timer = null;
      await passing;
      await Promise.all([...loops.values()].map((loop) => loop.abandon()));
      loops.clear();
    },
    wake() {
      if (started) pass();
    },
    async settle(projectLaui) {
      await passing;
      const loop = loops.get(projectLaui);
      if (loop) await loop.finish();
    },
  };
};

export const startSchedulers = (deps: CronDeps, options: CronSchedulerOptions = {}): CronScheduler => {
  const scheduler = createCronScheduler(deps, options);
  scheduler.start();
  return scheduler;
};
