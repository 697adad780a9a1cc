import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { KeyOwnership, MessageBus } from '../../shared/bus/MessageBus.ts';
import { metadataFor } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import { isCronHeartbeatDead, projectSchedulerInterval } from '../../shared/task/systemSettings.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { loadSystemSettings } from '../../shared/task/loadSystemSettings.ts';
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
  /** The projects this process runs a live loop for. */
  looping(): Laui[];
}

/**
 * Joins the schedulers' ownership group: `onChange` is called whenever the bus reassigns projects
 * (a scheduler joined or left). The key of a project is its LAUI.
 */
export type CronOwnershipSource = (onChange: () => void) => Promise<KeyOwnership>;

/** The bus topic and group whose partition assignment says which scheduler loops which project. */
export const CRON_OWNERSHIP = { topic: 'cron-ownership', group: 'cron-schedulers' } as const;

export const busCronOwnership =
  (bus: Pick<MessageBus, 'own'>): CronOwnershipSource =>
  (onChange) =>
    bus.own({ ...CRON_OWNERSHIP, onChange: () => onChange() });

export interface CronSchedulerOptions {
  /** How often the supervisor looks for crons without a live loop. */
  superviseMs?: number;
  /** Prefix of this process's loop owner ids (tests run two schedulers in one process). */
  ownerPrefix?: string;
  /**
   * Where this scheduler learns which projects are its own (the bus's assignment). Without it,
   * every process supervises every started project and only the heartbeats and claims arbitrate.
   */
  ownership?: CronOwnershipSource;
}

/**
 * The supervisor: every `superviseMs` it lists the project folders and, for each cron that is
 * STARTED or RUNNING without a live loop (no ephemeral heartbeat younger than 3 intervals, spec 4.5),
 * starts one here. That covers a new START, resuming after a restart (the ephemeral heartbeats are
 * gone, so every started cron is picked up at once) and taking over a loop that stopped beating
 * (a local one is abandoned first). A STOP whose loop is dead is completed here (STOPPED).
 *
 * With an ownership (the bus's partition assignment, key = project_laui) the supervisor looks only
 * at the projects the bus gives this process, so several scheduler processes share the projects
 * and take over those of one that leaves. When the assignment changes, the loops of projects no
 * longer owned end at once, their heartbeats are released so the new owner starts without waiting
 * 3 intervals, and a pass picks up the projects newly owned. Stopping releases the same way before
 * leaving the group. Ownership is at least once (two schedulers may both own a project during a
 * rebalance), which the heartbeat guard of the loops and the claim on each task's stream cover;
 * a scheduler that crashed keeps its heartbeats until they are 3 intervals old.
 * In the embedded mode the one process is the only member and owns every project.
 */
export const createCronScheduler = (deps: CronDeps, options: CronSchedulerOptions = {}): CronScheduler => {
  const superviseMs = options.superviseMs ?? 1000;
  const prefix = options.ownerPrefix ?? `${hostname()}:${process.pid}`;
  const loops = new Map<Laui, ProjectCronLoop>();
  let timer: NodeJS.Timeout | null = null;
  let passing: Promise<void> = Promise.resolve();
  let started = false;
  let ownership: KeyOwnership | null = null;
  /** Loops ended because their project went to another scheduler, until their heartbeat is released. */
  const releasing = new Set<Promise<void>>();

  const log = (level: 'info' | 'warning' | 'error', message: string, projectLaui?: Laui) =>
    deps.logger.log({ level, category: 'CRON', step: 'supervise', message, ...(projectLaui ? { project_laui: projectLaui } : {}) });

  /**
   * Ends a loop of this process and deletes its heartbeat if it is still the last beat, so that
   * the project's next owner sees no live loop and starts one at once.
   */
  const release = (loop: ProjectCronLoop, why: string): void => {
    const released = (async () => {
      await loop.abandon();
      const beat = await deps.liveness.last(loop.projectLaui);
      if (beat?.owner === loop.owner) await deps.liveness.forget(loop.projectLaui);
      log('info', `Cron loop ${loop.owner} ended: ${why}`, loop.projectLaui);
    })().catch((error: unknown) => log('error', `Releasing cron loop ${loop.owner} failed: ${String(error)}`, loop.projectLaui));
    releasing.add(released);
    void released.finally(() => releasing.delete(released));
  };

  const releaseDisowned = (): void => {
    if (!ownership) return;
    for (const loop of [...loops.values()]) {
      if (!ownership.owns(loop.projectLaui)) release(loop, 'the bus assigned the project to another scheduler');
    }
  };

  const onOwnershipChange = (): void => {
    if (!started) return;
    releaseDisowned();
    pass();
  };

  /** The first pass joins the ownership group; a failed join is retried at the next pass, with no loop meanwhile. */
  const joinOwnership = async (): Promise<boolean> => {
    if (!options.ownership) return true;
    if (!ownership) {
      const joined = await options.ownership(onOwnershipChange);
      if (!started) {
        await joined.close();
        return false;
      }
      ownership = joined;
    }
    return true;
  };

  const superviseProject = async (project: ItemDoc, intervalSeconds: number): Promise<void> => {
    const status = cronStatusOf(project.folder_metadata);
    if (status === null || (status !== 'STOP' && !ACTIVE_CRON_STATUSES.includes(status))) return;
    // Another scheduler owns it: its supervisor starts, takes over or completes the STOP.
    if (ownership && !ownership.owns(project.laui)) return;
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
    if (!(await joinOwnership())) return;
    releaseDisowned();
    const settings = await loadSystemSettings(deps);
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

  /** A pass not begun yet covers any asked for meanwhile: a slow pass (a bus that cannot be joined) does not pile them up. */
  let queued = false;
  const pass = (): void => {
    if (queued) return;
    queued = true;
    passing = passing
      .then(() => {
        queued = false;
        return supervise();
      })
      .catch((error: unknown) => log('error', `Cron supervisor failed: ${String(error)}`));
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
      if (ownership) {
        // Heartbeats released before leaving: the schedulers that get these projects start them at once.
        for (const loop of [...loops.values()]) release(loop, 'the scheduler stopped');
        await Promise.all([...releasing]);
        const leaving = ownership;
        ownership = null;
        await leaving.close();
      }
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
    looping() {
      return [...loops.values()].filter((loop) => !loop.isEnded).map((loop) => loop.projectLaui);
    },
  };
};

export const startSchedulers = (deps: CronDeps, options: CronSchedulerOptions = {}): CronScheduler => {
  const scheduler = createCronScheduler(deps, options);
  scheduler.start();
  return scheduler;
};
