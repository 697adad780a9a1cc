import { metadataFor } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import { isCronHeartbeatDead, projectSchedulerInterval } from '../../shared/task/systemSettings.ts';
import { loadSystemSettings } from '../../shared/task/loadSystemSettings.ts';
import { changeCronStatus } from './changeCronStatus.ts';
import { ACTIVE_CRON_STATUSES, cronStatusOf, type CronCommand } from './cronLifecycle.ts';
import { newLoopMemory, schedulerCycle, type CronDeps } from './schedulerCycle.ts';

/** Consecutive failed cycles after which the cron is in ERROR (spec 3.3 "unrecoverable"); one failure is retried. */
export const MAX_FAILED_CYCLES = 5;
/** While a catching-up task is in flight the loop looks again this soon, so the next due run follows at once (spec 3.1). */
export const FAST_POLL_MS = 200;

/**
 * The scheduler loop of one project in this process. Each pass re-reads the project (status,
 * interval) so STOP, a changed interval or a deleted project take effect at the next pass:
 * STARTED -> RUNNING at the first pass, STOP -> STOPPED and the loop ends, any other status ends it.
 * Every pass beats the ephemeral heartbeat (projections/cron/cronLiveness.ts).
 */
export class ProjectCronLoop {
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<void> = Promise.resolve();
  private ended = false;
  private failures = 0;
  private readonly memory = newLoopMemory();

  constructor(
    private readonly deps: CronDeps,
    readonly projectLaui: Laui,
    readonly owner: string,
    private readonly onEnd: (loop: ProjectCronLoop) => void,
  ) {}

  get isEnded(): boolean {
    return this.ended;
  }

  start(): void {
    this.schedule(0);
  }

  /** Ends the loop after its current pass, writing nothing (a takeover, or the process stopping). */
  async abandon(): Promise<void> {
    this.end();
    await this.current;
  }

  /** After a STOP: waits for the current pass, then makes the final one (it writes STOPPED). */
  async finish(): Promise<void> {
    await this.abandon();
    await this.pass().catch((error: unknown) => this.log('error', `Final pass failed: ${String(error)}`));
  }

  private end(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!this.ended) {
      this.ended = true;
      this.onEnd(this);
    }
  }

  private schedule(delayMs: number): void {
    if (this.ended) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.current = this.tick();
    }, delayMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.ended) return;
    let delay: number | null;
    try {
      delay = await this.pass();
    } catch (error) {
      delay = await this.failed(error);
    }
    if (delay === null) this.end();
    else this.schedule(delay);
  }

  /** One pass; the delay until the next, or null when the loop ends. */
  private async pass(): Promise<number | null> {
    const deps = this.deps;
    const project = await deps.items.get(this.projectLaui);
    if (!project || project.is_deleted || project.item_type !== 'folder.project') return null;
    const settings = await loadSystemSettings(deps);
    const intervalSeconds = projectSchedulerInterval(settings, project.name);
    const now = deps.clock.now();
    const beat = await deps.liveness.last(this.projectLaui);
    // Two loops on one project (processes that each thought the other dead): the smaller owner id keeps it.
    if (beat && beat.owner !== this.owner && beat.owner < this.owner && !isCronHeartbeatDead(beat.at, now, intervalSeconds)) return null;
    const status = cronStatusOf(project.folder_metadata);
    const context = { now, liveBeat: beat?.at ?? null, intervalSeconds };
    if (status === 'STOP') {
      await this.setStatus({ kind: 'loop_ended' }, context);
      await deps.liveness.forget(this.projectLaui);
      this.log('info', 'Cron stopped');
      return null;
    }
    if (status === null || !ACTIVE_CRON_STATUSES.includes(status) || this.ended) return null;
    if (status === 'STARTED') await this.setStatus({ kind: 'loop_began' }, context);
    const beatNow = () => deps.liveness.beat(this.projectLaui, deps.clock.now(), this.owner);
    await beatNow();
    const outcome = await schedulerCycle(deps, project, settings, this.memory, beatNow);
    this.failures = 0;
    return outcome.catchingUp ? Math.min(FAST_POLL_MS, intervalSeconds * 1000) : intervalSeconds * 1000;
  }

  private async failed(error: unknown): Promise<number | null> {
    this.failures += 1;
    const message = error instanceof Error ? error.message : String(error);
    this.log('error', `Scheduler cycle failed (${this.failures}/${MAX_FAILED_CYCLES}): ${message}`);
    if (this.failures < MAX_FAILED_CYCLES) return 1000;
    const now = this.deps.clock.now();
    await this.setStatus({ kind: 'loop_failed', error: message }, { now, liveBeat: now, intervalSeconds: 1 }).catch((cause: unknown) =>
      this.log('critical', `Could not record the cron error: ${String(cause)}`),
    );
    return null;
  }

  private async setStatus(command: CronCommand, context: { now: Date; liveBeat: Date | null; intervalSeconds: number }): Promise<void> {
    await changeCronStatus(this.deps.eventStore, this.projectLaui, command, context, metadataFor(null, context.now, `cron-${this.projectLaui}`, this.owner));
  }

  private log(level: 'info' | 'error' | 'critical', message: string): void {
    this.deps.logger.log({ level, category: 'CRON', step: 'loop', message, project_laui: this.projectLaui, owner: this.owner });
  }
}
