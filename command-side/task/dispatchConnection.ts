import type { EventMetadata } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import type { ItemDoc } from '../../projections/catalog/itemsProjection.ts';
import { changeTask } from './changeTask.ts';
import { EXECUTE_TASK, type TaskDeps } from './taskDeps.ts';
import { renderPayload } from './renderPayload.ts';

/** What a worker receives on `execute_task`. */
export interface ExecuteTaskMessage {
  task_laui: Laui;
  connection_laui: Laui;
  dispatch_id: string;
  session_id: string;
  /** A user access token generated at dispatch (spec 4.2 rule 1), for workers that report over HTTP. */
  access_token: string;
  payload: unknown;
  user_laui: Laui | null;
  /** Log position of the queued_in_redis change: a worker reads the task only once its read model has it. */
  position: string | null;
}

/** Worker tokens outlive the longest run they may report on. */
const WORKER_TOKEN_TTL_SECONDS = 24 * 60 * 60;

/**
 * Load balancing of rule 8 for one connection: lease every free slot to the first waiting tasks,
 * template each leased task's payload, mark it queued_in_redis with its session and publish it.
 * Returns the bus message id per task (execution_result_id).
 */
export const dispatchConnection = async (deps: TaskDeps, connectionLaui: Laui, metadata: EventMetadata): Promise<{ sent: Map<Laui, string>; position: Position | null }> => {
  const connection = await deps.items.get(connectionLaui);
  const maxParallelism = typeof connection?.max_parallelism === 'number' ? connection.max_parallelism : 1;
  const sortDict = (connection?.sort_dict as Record<string, string> | undefined) ?? {};
  const { leases, position } = await deps.queue.dispatch(connectionLaui, maxParallelism, sortDict, metadata);
  const sent = new Map<Laui, string>();
  let latest = position;
  for (const lease of leases) {
    const task = await deps.items.get(lease.taskLaui);
    if (!task) continue;
    const payload = await renderPayload(deps, task, metadata);
    const at = metadata.at;
    const changed = await changeTask(
      deps.eventStore,
      task.laui,
      { state: 'queued_in_redis', session_id: lease.sessionId, last_system_updated_date: at },
      metadata,
    );
    if (changed !== null) latest = changed;
    const message: ExecuteTaskMessage = {
      task_laui: task.laui,
      connection_laui: connectionLaui,
      dispatch_id: lease.dispatchId,
      session_id: lease.sessionId,
      access_token: await deps.tokens.sign('access', ownerOf(task, metadata), { purpose: 'worker', task_laui: task.laui }, WORKER_TOKEN_TTL_SECONDS),
      payload,
      user_laui: ownerOf(task, metadata),
      position: changed === null ? null : changed.toString(),
    };
    sent.set(task.laui, await deps.bus.publish(EXECUTE_TASK, task.laui, message));
    deps.logger.log({
      level: 'info',
      category: 'TASK',
      step: 'dispatch',
      message: `Task ${task.name} dispatched to the worker queue`,
      session_id: lease.sessionId,
      task_laui: task.laui,
      task_name: task.name,
      logical_date: task.logical_date ?? null,
    });
  }
  return { sent, position: latest };
};

const ownerOf = (task: ItemDoc, metadata: EventMetadata): Laui | null => metadata.user_laui ?? task.created_by;
