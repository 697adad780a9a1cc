import { metadataFor } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import { abandonRun } from './abandonRun.ts';
import { dispatchConnection, maxParallelismOf } from './dispatchConnection.ts';
import { loadSystemSettings } from '../../shared/task/loadSystemSettings.ts';
import type { WorkerDeps } from './executeTask.ts';
import { judgeLease } from './judgeLease.ts';

export interface ReaperOptions {
  /**
   * Whether the bus still holds a dispatch message of the task (judgeLease's `busHolds`): given
   * where this process can know it (the in-process bus), null where it cannot (Kafka).
   */
  busHolds: ((taskLaui: Laui) => boolean) | null;
  /** When this process started receiving beats. */
  watchingSince: Date;
}

/**
 * A dead worker must never hold a slot for ever, and a run waiting for a worker slot must never
 * lose it: each lease is judged by judgeLease (a run is stale only when its own heartbeats stop);
 * an abandoned run's task becomes `error` and its slot goes on, in one commit (abandonRun). A connection left with a free slot
 * and a waiting task (a dispatch whose message could not be sent) gets a dispatch too.
 */
export const reapStaleLeases = async (
  deps: WorkerDeps,
  connections: Iterable<Laui>,
  options: ReaperOptions,
): Promise<number> => {
  const settings = await loadSystemSettings(deps);
  let reaped = 0;
  for (const connectionLaui of connections) {
    const state = await deps.queue.state(connectionLaui);
    let freed = false;
    for (const lease of state.running.values()) {
      const verdict = judgeLease({
        lease,
        task: await deps.items.get(lease.taskLaui),
        beat: deps.heartbeats.last(lease.taskLaui),
        busHolds: options.busHolds ? options.busHolds(lease.taskLaui) : null,
        watchingSince: options.watchingSince,
        now: deps.clock.now(),
        staleSeconds: settings.stale_heartbeat_seconds,
      });
      if (verdict.kind === 'keep') continue;
      await abandonRun(deps, connectionLaui, lease, verdict.kind === 'reap' ? verdict.error : null);
      deps.heartbeats.forget(lease.taskLaui);
      reaped += 1;
      freed = true;
    }
    // A freed slot was leased again in its release's commit (abandonRun); a connection with a free
    // slot and a waiting run (a dispatch whose message could not be sent) gets a dispatch here.
    const stalled = !freed && state.waiting.size > 0 && state.running.size < maxParallelismOf(await deps.items.peek(connectionLaui));
    if (stalled) await dispatchConnection(deps, connectionLaui, metadataFor(null, deps.clock.now(), 'reaper'));
  }
  return reaped;
};
