import { metadataFor, type EventMetadata } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import { fromStatesOf } from '../../shared/task/transitions.ts';
import { changesOf, decideRun } from '../../shared/task/runLifecycle.ts';
import type { TaskRecord } from '../../shared/task/taskFields.ts';
import type { ItemState } from '../catalog/item.ts';
import type { Lease } from '../queue/handler.ts';
import { endRun } from './endRun.ts';
import type { TaskDeps } from './taskDeps.ts';
import type { RunObserver } from '../../shared/ports/RunObserver.ts';

type KnownTask = Exclude<ItemState, { status: 'none' }>;

/** The table's lease_reaped row: queued_in_redis or running. */
const ABANDONED_FROM = fromStatesOf('lease_reaped');

/**
 * Ends a dispatched run that no worker will finish, by the path a worker's end takes
 * (endRun: one queue commit): its task becomes `error` with `error` as its output
 * (the lifecycle's Reaped row: retry_number + 1, so the retry rule applies), its slot is released
 * (reason `stale`, only while the lease is still this session's) and, unless `leaseNext` is false,
 * leased to the next waiting run in the same commit. Decided on the task's stream, not the read
 * model (which may not have the dispatch yet): a task that left the dispatch meanwhile, or runs
 * under another session, is not changed. `error` null releases the slot only (a lease its task no
 * longer runs under). The run's session ends with a line saying why.
 */
export const abandonRun = async (
  deps: TaskDeps & { runs?: RunObserver },
  connectionLaui: Laui,
  lease: Lease,
  error: string | null,
  leaseNext = true,
): Promise<EventMetadata> => {
  const now = deps.clock.now();
  const metadata = metadataFor(null, now, `reaper-${lease.dispatchId}`, lease.dispatchId);
  let ended: KnownTask | null = null;
  let written = false;
  const reaped = (state: ItemState) => {
    ended = error !== null && state.status === 'live' && state.fields.session_id === lease.sessionId && ABANDONED_FROM.includes(String(state.fields.state)) ? state : null;
    if (ended === null) return [];
    // load -> decide (the lifecycle's Reaped row, whose effect is the stale release below) -> commit.
    return changesOf(decideRun(ended.fields as TaskRecord, { trigger: 'Reaped', at: now })).map((changes) => ({
      ...changes,
      last_run_output: { error },
      last_run_date: now.toISOString(),
      task_instance_end_date: now.toISOString(),
    }));
  };
  await endRun(deps, connectionLaui, metadata, {
    taskLaui: lease.taskLaui,
    slot: { sessionId: lease.sessionId, reason: 'stale' },
    ...(error === null ? {} : { terminal: { changes: reaped, endsFrom: ABANDONED_FROM, committed: () => (written = true) } }),
    leaseNext,
  });
  const task = written ? (ended as KnownTask | null) : null;
  // The run's end: the last line of its session (a worker that is still alive adds its own end line after it).
  if (task !== null) {
    deps.runs?.abandoned('error');
    deps.logger.log({ level: 'error', category: 'TASK_HISTORY', step: 'reap', message: `Task ${task.name}: ${error}; slot released`, session_id: lease.sessionId, task_laui: lease.taskLaui, task_name: task.name, logical_date: task.fields.logical_date ?? null, status: 'error', session_end: true });
  }
  return metadata;
};
