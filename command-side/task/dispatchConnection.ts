import type { EventMetadata } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import type { ItemDoc } from '../../projections/catalog/itemsProjection.ts';
import { changeTask } from './changeTask.ts';
import type { Lease } from '../queue/handler.ts';
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
 * With `finished` (spec 3.1, a worker's finish) the run first leaves its slot, in the same queue
 * commit, and only if the lease is still that run's: a reaped or reset lease is left alone.
 * Returns the bus message id per task (execution_result_id).
 */
export const dispatchConnection = async (
  deps: TaskDeps,
  connectionLaui: Laui,
  metadata: EventMetadata,
  finished?: { taskLaui: Laui; sessionId: string },
): Promise<{ sent: Map<Laui, string>; position: Position | null }> => {
  const connection = await deps.items.peek(connectionLaui);
  const batch = { tasks: [], finished: finished ? [finished] : [] };
  const { leases, position } = await deps.queue.enqueueManyAndDispatch(connectionLaui, batch, maxParallelismOf(connection), sortDictOf(connection), metadata);
  const sent = await sendLeases(deps, connectionLaui, leases, metadata, null);
  return { sent: sent.sent, position: sent.position ?? position };
};

export const maxParallelismOf = (connection: ItemDoc | null): number => (typeof connection?.max_parallelism === 'number' ? connection.max_parallelism : 1);
export const sortDictOf = (connection: ItemDoc | null): Record<string, string> => (connection?.sort_dict as Record<string, string> | undefined) ?? {};

/**
 * Sends leased tasks to the workers: templated payload, state queued_in_redis with the lease's
 * session, `execute_task` published. `lead` carries changes for a task that was enqueued in the same
 * commit as its lease: its queued_for_connection step is written together with queued_in_redis.
 */
export const sendLeases = async (
  deps: TaskDeps,
  connectionLaui: Laui,
  leases: ReadonlyArray<Lease>,
  metadata: EventMetadata,
  lead: { taskLaui: Laui; changes: Record<string, unknown> } | null,
): Promise<{ sent: Map<Laui, string>; position: Position | null }> => {
  const sent = new Map<Laui, string>();
  let latest: Position | null = null;
  for (const lease of leases) {
    // peek: the task is only read (templating, the message), never changed; a copy per dispatched
    // task was ~5% of a scheduler cycle.
    const stored = await deps.items.peek(lease.taskLaui);
    if (!stored) continue;
    const leading = lead?.taskLaui === lease.taskLaui ? lead.changes : null;
    const task = leading ? { ...stored, ...leading } : stored;
    const payload = await renderPayload(deps, task, metadata);
    const queued = { state: 'queued_in_redis', session_id: lease.sessionId, last_system_updated_date: metadata.at };
    const changed = await changeTask(deps.eventStore, task.laui, leading ? [leading, queued] : queued, metadata);
    if (changed !== null) latest = changed;
    const user = ownerOf(task, metadata);
    const message: ExecuteTaskMessage = {
      task_laui: task.laui,
      connection_laui: connectionLaui,
      dispatch_id: lease.dispatchId,
      session_id: lease.sessionId,
      access_token: await workerToken(deps, user, task.laui),
      payload,
      user_laui: user,
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

/** RSA signing costs milliseconds: a user's worker token is reused while it has an hour left. */
// Per signer: a token made with one service's key is worthless to another in the same process.
// The signing in flight is shared: a batch of dispatches for one user signs once, not once per task.
const workerTokens = new WeakMap<TaskDeps['tokens'], Map<string, { token: Promise<string>; expiresAt: number }>>();
const workerToken = (deps: TaskDeps, user: Laui | null, taskLaui: Laui): Promise<string> => {
  const key = user ?? '';
  let tokens = workerTokens.get(deps.tokens);
  if (!tokens) {
    tokens = new Map();
    workerTokens.set(deps.tokens, tokens);
  }
  const cached = tokens.get(key);
  const now = deps.clock.now().getTime();
  if (cached && cached.expiresAt - now > 3600_000) return cached.token;
  const token = deps.tokens.sign('access', user, { purpose: 'worker', task_laui: taskLaui }, WORKER_TOKEN_TTL_SECONDS);
  const entry = { token, expiresAt: now + WORKER_TOKEN_TTL_SECONDS * 1000 };
  tokens.set(key, entry);
  // A failed signing is not remembered: the next dispatch tries again.
  token.catch(() => {
    if (tokens.get(key) === entry) tokens.delete(key);
  });
  return token;
};

const ownerOf = (task: ItemDoc, metadata: EventMetadata): Laui | null => metadata.user_laui ?? task.created_by;
