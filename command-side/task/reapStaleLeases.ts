import { metadataFor } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import { failureChanges, fromStatesOf } from '../../shared/task/transitions.ts';
import type { TaskRecord } from '../../shared/task/taskFields.ts';
import { changeTask } from './changeTask.ts';
import { dispatchConnection } from './dispatchConnection.ts';
import { loadSystemSettings } from '../../shared/task/loadSystemSettings.ts';
import type { WorkerDeps } from './executeTask.ts';

/**
 * A dead worker must never hold a slot for ever: a lease whose task has not beaten for
 * `stale_heartbeat_seconds` (or, with no heartbeat at all, was taken that long ago) is released,
 * its task becomes `error` (retry_number + 1, so the retry rule applies), and the slot goes on.
 */
export const reapStaleLeases = async (deps: WorkerDeps, connections: Iterable<Laui>): Promise<number> => {
  const settings = await loadSystemSettings(deps);
  const now = deps.clock.now();
  let reaped = 0;
  for (const connectionLaui of connections) {
    const state = await deps.queue.state(connectionLaui);
    let freed = false;
    for (const lease of state.running.values()) {
      const last = deps.heartbeats.last(lease.taskLaui) ?? new Date(lease.leasedAt);
      if (now.getTime() - last.getTime() < settings.stale_heartbeat_seconds * 1000) continue;
      const metadata = metadataFor(null, now, `reaper-${lease.dispatchId}`, lease.dispatchId);
      const task = await deps.items.get(lease.taskLaui);
      if (task && (task.state === 'running' || task.state === 'queued_in_redis') && task.session_id === lease.sessionId) {
        const { changes } = failureChanges(task as unknown as TaskRecord, 'error');
        await changeTask(
          deps.eventStore,
          task.laui,
          { ...changes, last_run_output: { error: 'worker heartbeat went stale; the run was abandoned' }, last_run_date: now.toISOString(), task_instance_end_date: now.toISOString() },
          metadata,
          // The table's lease_reaped row: a task that left the dispatch meanwhile is not changed.
          fromStatesOf('lease_reaped'),
        );
        // The run's end: the last line of its session (a worker that is still alive adds its own end line after it).
        deps.logger.log({ level: 'error', category: 'TASK_HISTORY', step: 'reap', message: `Task ${task.name}: stale heartbeat, slot released`, session_id: lease.sessionId, task_laui: task.laui, task_name: task.name, logical_date: task.logical_date ?? null, status: 'error', session_end: true });
      }
      await deps.queue.release(connectionLaui, lease.taskLaui, lease.dispatchId, 'stale', metadata);
      deps.heartbeats.forget(lease.taskLaui);
      reaped += 1;
      freed = true;
    }
    if (freed) await dispatchConnection(deps, connectionLaui, metadataFor(null, now, 'reaper'));
  }
  return reaped;
};
