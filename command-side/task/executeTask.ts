import { hostname } from 'node:os';
import { metadataFor } from '../../shared/events.ts';
import type { BusMessage } from '../../shared/bus/MessageBus.ts';
import type { Clock } from '../../shared/clock.ts';
import type { CodeBlock, CodeRunner, OperatorOutcome } from '../../shared/ports/CodeRunner.ts';
import type { SecretBox } from '../../shared/ports/SecretBox.ts';
import { openSecretField } from '../../shared/item-types/secretFields.ts';
import { cancelledChanges, failChanges, failureChanges, successChanges, workerPickupChanges } from '../../shared/task/transitions.ts';
import type { TaskRecord } from '../../shared/task/taskFields.ts';
import type { ItemDoc } from '../../projections/catalog/itemsProjection.ts';
import { changeTask } from './changeTask.ts';
import { dispatchConnection, type ExecuteTaskMessage } from './dispatchConnection.ts';
import { mergedConfigOf } from './mergedConfig.ts';
import { loadSystemSettings, type TaskDeps } from './taskDeps.ts';
import type { HeartbeatStore } from './HeartbeatStore.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';

export interface WorkerDeps extends TaskDeps {
  runner: CodeRunner;
  secrets: SecretBox;
  heartbeats: HeartbeatStore;
  clock: Clock;
  /** How often check_completion is polled and user_set_state checked. */
  pollIntervalMs: number;
  limits: { timeoutMs: number; memoryMb: number; maxOutputBytes: number };
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
}

const EXECUTOR = `${hostname()}:${process.pid}`;

/** Catalog create examples say `code`, the action endpoint `content`: both are accepted. */
export const normaliseCodeBlock = (value: unknown): CodeBlock | null => {
  if (value === null || typeof value !== 'object') return null;
  const block = value as { language?: unknown; code?: unknown; content?: unknown };
  const code = typeof block.code === 'string' ? block.code : typeof block.content === 'string' ? block.content : null;
  const language = String(block.language ?? '').toLowerCase();
  const normalised = language === 'py' || language === 'python3' ? 'python' : language === 'js' || language === 'node' || language === 'typescript' ? 'javascript' : language;
  if (code === null || (normalised !== 'python' && normalised !== 'javascript')) return null;
  return { language: normalised, code };
};

const terminalChanges = (task: ItemDoc, outcome: OperatorOutcome, now: Date): { changes: Record<string, unknown>; dispatchNow: boolean } => {
  const record = task as unknown as TaskRecord;
  switch (outcome.status) {
    case 'success': {
      const { changes, dispatchNow } = successChanges(record, now);
      return { changes: { ...changes }, dispatchNow };
    }
    case 'error':
    case 'timeout':
      return { changes: { ...failureChanges(record, outcome.status).changes }, dispatchNow: false };
    case 'cancelled':
      return { changes: { ...cancelledChanges() }, dispatchNow: false };
    case 'fail':
      return { changes: { ...failChanges() }, dispatchNow: false };
  }
};

/**
 * The `execute_task` consumer. Delivery is at least once: a message whose session is no longer the
 * task's current one, or whose task already left queued_in_redis, was handled before and is dropped.
 */
export const executeTask = (deps: WorkerDeps) => async (message: BusMessage<ExecuteTaskMessage>): Promise<void> => {
  const { task_laui: taskLaui, session_id: sessionId, dispatch_id: dispatchId, connection_laui: connectionLaui } = message.value;
  // The message can outrun the projection: read the task only once its dispatch is applied, or the
  // session check below would take a fresh dispatch for a duplicate.
  if (message.value.position) await deps.readModels.waitFor(BigInt(message.value.position), deps.readYourWritesTimeoutMs);
  const task = await deps.items.get(taskLaui);
  if (!task || task.session_id !== sessionId || task.state !== 'queued_in_redis') return;
  const metadata = () => metadataFor(message.value.user_laui, deps.clock.now(), sessionId, dispatchId);
  const log = (level: 'info' | 'error', category: 'TASK' | 'TASK_HISTORY' | 'CELERY', step: string, text: string, extra: Record<string, unknown> = {}) =>
    deps.logger.log({ level, category, step, message: text, session_id: sessionId, task_laui: taskLaui, task_name: task.name, logical_date: task.logical_date ?? null, ...extra });

  const started = deps.clock.now();
  const pickup = workerPickupChanges(task as unknown as TaskRecord, started);
  await changeTask(deps.eventStore, taskLaui, { ...pickup, executor: EXECUTOR, last_run_session_id: sessionId, task_instance: dispatchId }, metadata());
  deps.heartbeats.beat(taskLaui, started);
  log('info', 'CELERY', 'pickup', `Worker ${EXECUTOR} picked up task ${task.name}`);

  const settings = await loadSystemSettings(deps.items);
  const [operator, connection, merged] = await Promise.all([
    deps.items.get(String(task.operator_laui)),
    deps.items.get(connectionLaui),
    mergedConfigOf(deps.items, task),
  ]);
  const context = {
    task_laui: taskLaui,
    task_name: task.name,
    session_id: sessionId,
    logical_date: task.logical_date ?? null,
    data_interval_start: pickup.data_interval_start ?? null,
    data_interval_end: pickup.data_interval_end ?? null,
    parameters: merged.config.parameters,
  };
  const outcome = await deps.runner.runOperator({
    codeblock: normaliseCodeBlock(operator?.codeblock),
    bashblock: typeof (operator?.bashblock as { code?: unknown } | undefined)?.code === 'string' ? { code: String((operator?.bashblock as { code: string }).code) } : null,
    connection: openSecretField(connection?.content ?? {}, deps.secrets),
    payload: message.value.payload,
    context,
    limits: deps.limits,
    pollIntervalMs: deps.pollIntervalMs,
    checkCompletionTimeoutMs: settings.check_completion_timeout_seconds * 1000,
    isCancelled: async () => (await deps.items.peek(taskLaui))?.user_set_state === 'cancel',
    onHeartbeat: () => deps.heartbeats.beat(taskLaui, deps.clock.now()),
    // An operator opts into process reuse (faster, less isolated: docs/decisions.md).
    reuse: operator?.reuse_process === true,
  });

  const ended = deps.clock.now();
  const current = (await deps.items.get(taskLaui)) ?? task;
  const { changes, dispatchNow } = terminalChanges(current, outcome, ended);
  await changeTask(
    deps.eventStore,
    taskLaui,
    {
      ...changes,
      duration: Math.trunc((ended.getTime() - started.getTime()) / 1000),
      last_run_output: outcome.output,
      last_run_date: ended.toISOString(),
      task_instance_end_date: ended.toISOString(),
      latest_heartbeat: ended.toISOString(),
    },
    metadata(),
  );
  deps.heartbeats.forget(taskLaui);
  log(
    outcome.status === 'success' ? 'info' : 'error',
    'TASK_HISTORY',
    'finish',
    `Task ${task.name} ended ${String(changes.state)}${'message' in outcome ? `: ${outcome.message}` : ''}`,
    { status: changes.state, duration_seconds: (ended.getTime() - started.getTime()) / 1000 },
  );
  // Finish (spec 3.1): leave the connection queue, then give the freed slot to the next task.
  await deps.queue.release(connectionLaui, taskLaui, dispatchId, 'finished', metadata()).catch(() => undefined);
  await dispatchConnection(deps, connectionLaui, metadata());
  if (dispatchNow) log('info', 'TASK', 'catch-up', 'next_run_date already due: the scheduler dispatches the next run at once');
};
