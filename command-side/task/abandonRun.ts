import { metadataFor, type EventMetadata } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import { fromStatesOf, runChanges } from '../../shared/task/transitions.ts';
import type { TaskRecord } from '../../shared/task/taskFields.ts';
import type { ItemState } from '../catalog/item.ts';
import type { Lease } from '../queue/handler.ts';
import { changeTask } from './changeTask.ts';
import type { TaskDeps } from './taskDeps.ts';
import type { RunObserver } from '../../shared/ports/RunObserver.ts';

type KnownTask = Exclude<ItemState, { status: 'none' }>;

/** The table's lease_reaped row: queued_in_redis or running. */
const ABANDONED_FROM = fromStatesOf('lease_reaped');

/**
 * Ends a dispatched run that no worker will finish: its task becomes `error` with `error` as its
 * output (retry_number + 1, so the retry rule applies), the run's session ends with a line saying
 * why, and its slot is released (reason `stale`). Decided on the task's stream, not the read model
 * (which may not have the dispatch yet): a task that left the dispatch meanwhile, or runs under
 * another session, is not changed. `error` null releases the slot only (a lease its task no longer
 * runs under).
 */
export const abandonRun = async (
  deps: Pick<TaskDeps, 'clock' | 'eventStore' | 'logger' | 'queue'> & { runs?: RunObserver },
  connectionLaui: Laui,
  lease: Lease,
  error: string | null,
): Promise<EventMetadata> => {
  const now = deps.clock.now();
  const metadata = metadataFor(null, now, `reaper-${lease.dispatchId}`, lease.dispatchId);
  if (error !== null) {
    let ended: KnownTask | null = null;
    await changeTask(
      deps.eventStore,
      lease.taskLaui,
      (state) => {
        ended = state.status === 'live' && state.fields.session_id === lease.sessionId && ABANDONED_FROM.includes(String(state.fields.state)) ? state : null;
        if (ended === null) return [];
        const { changes } = runChanges({ trigger: 'Reaped', at: now }, ended.fields as TaskRecord);
        return [{ ...changes, last_run_output: { error }, last_run_date: now.toISOString(), task_instance_end_date: now.toISOString() }];
      },
      metadata,
      ABANDONED_FROM,
    );
    const task = ended as KnownTask | null;
    // The run's end: the last line of its session (a worker that is still alive adds its own end line after it).
    if (task !== null) {
      deps.runs?.abandoned('error');
      deps.logger.log({ level: 'error', category: 'TASK_HISTORY', step: 'reap', message: `Task ${task.name}: ${error}; slot released`, session_id: lease.sessionId, task_laui: lease.taskLaui, task_name: task.name, logical_date: task.fields.logical_date ?? null, status: 'error', session_end: true });
    }
  }
  await deps.queue.release(connectionLaui, lease.taskLaui, lease.dispatchId, 'stale', metadata);
  return metadata;
};
