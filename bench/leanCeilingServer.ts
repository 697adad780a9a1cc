import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Koa from 'koa';
import type { EventToAppend } from '../shared/events.ts';
import type { AppendResult } from '../shared/event-store/EventStore.ts';
import { keyedBatcher } from '../shared/keyedBatcher.ts';
import { openSqliteEventStore } from '../ops/event-store/sqlite/SqliteEventStore.ts';
import { ProcessCodeRunner } from '../ops/worker/ProcessCodeRunner.ts';
import { noop } from '../ops/worker/runnerBench.ts';

/**
 * The lean pipeline of bench/leanCeiling.ts (its doc says what it keeps and what it leaves out):
 * `POST /run {id}` commits the run's queue and task events and answers once they are durable, then
 * runs the no-op operator in a reused process and commits its end; `GET /tasks` lists the tasks'
 * states. The queue stream takes one commit at a time through the service's keyedBatcher, every
 * decision waiting for it going into the next one, each with its tasks' events.
 */
const dir = process.argv[2] as string;
// LEAN_WRITER=main: commits on this thread (the placement the CLI uses), to weigh the writer thread's hops.
const store = openSqliteEventStore({ file: join(dir, 'events.sqlite'), writer: process.env.LEAN_WRITER === 'main' ? 'main-thread' : 'worker-thread' });
await store.writerReady();
const runner = new ProcessCodeRunner({ poolSize: 2, maxIdleReusable: 16 });
await runner.warmUp('javascript', 128);
const code = 'export function run() { return null; }\nexport function check_completion() { return { status: "success" }; }\n';
const run = { ...noop('javascript', true), codeblock: { language: 'javascript' as const, code } };

interface Task {
  id: string;
  state: string;
  iteration: number;
  revision: number | 'no_stream';
}
const tasks = new Map<string, Task>();
const metadata = (): EventToAppend['metadata'] => ({ user_laui: null, correlation_id: randomUUID(), causation_id: null, at: new Date().toISOString() });

/** One decision of the queue: its event, and the task's events committed with it. */
interface Decision {
  queueEvent: EventToAppend;
  task: Task;
  taskEvents: EventToAppend[];
}
let queueRevision: number | 'no_stream' = 'no_stream';
/** The queue stream takes one commit at a time; the decisions made meanwhile go into the next (the service's keyedBatcher). */
const commitQueue = keyedBatcher<Decision, void>(async (streamId, batch) => {
  const results = await store.appendAtomically([
    { streamId, events: batch.map((decision) => decision.queueEvent), expected: queueRevision },
    ...batch.map((decision) => ({ streamId: `item-${decision.task.id}`, events: decision.taskEvents, expected: decision.task.revision })),
  ]);
  queueRevision = (results[0] as AppendResult).nextExpectedRevision;
  batch.forEach((decision, index) => (decision.task.revision = (results[index + 1] as AppendResult).nextExpectedRevision));
  return batch.map(() => ({ status: 'fulfilled' as const, value: undefined }));
});
const decide = (task: Task, queueEvent: EventToAppend, taskEvents: EventToAppend[]): Promise<void> => commitQueue('queue-lean', { queueEvent, task, taskEvents });

const execute = async (task: Task, session: string): Promise<void> => {
  const outcome = await runner.runOperator(run);
  const at = metadata();
  await decide(task, { type: 'TaskSlotReleased', data: { task_laui: task.id, session_id: session }, metadata: at }, [
    { type: 'TaskStarted', data: { changes: { state: 'running', executor: 'lean' }, from: 'queued_in_redis', to: 'running' }, metadata: at },
    { type: 'TaskSucceeded', data: { changes: { state: outcome.status, last_run_output: outcome.output }, from: 'running', to: outcome.status }, metadata: at },
  ]);
  task.state = outcome.status;
};

/** Queues one run (its commit awaited), then runs it in the background. */
const start = async (id: string): Promise<void> => {
  let task = tasks.get(id);
  if (!task) {
    task = { id, state: 'scheduled', iteration: 0, revision: 'no_stream' };
    tasks.set(id, task);
  }
  if (task.state !== 'scheduled' && task.state !== 'success') throw new Error(`task ${id} is in flight`);
  const session = randomUUID();
  const at = metadata();
  const from = task.state;
  task.state = 'queued_for_connection';
  await decide(task, { type: 'TaskLeased', data: { task_laui: id, session_id: session }, metadata: at }, [
    { type: 'TaskQueued', data: { changes: { state: 'queued_for_connection' }, from, to: 'queued_for_connection' }, metadata: at },
    { type: 'TaskDispatched', data: { changes: { state: 'queued_in_redis', session_id: session }, from: 'queued_for_connection', to: 'queued_in_redis' }, metadata: at },
  ]);
  task.state = 'queued_in_redis';
  task.iteration += 1;
  void execute(task, session);
};
const app = new Koa();
app.use(async (ctx) => {
  if (ctx.method === 'GET' && ctx.path === '/tasks') {
    // ?ids=a,b: those tasks (a watcher's batch), else every task.
    const ids = typeof ctx.query.ids === 'string' ? ctx.query.ids.split(',') : null;
    const listed = ids === null ? [...tasks.values()] : ids.flatMap((id) => tasks.get(id) ?? []);
    ctx.body = listed.map(({ id, state, iteration }) => ({ id, state, iteration }));
    return;
  }
  if (ctx.method === 'POST' && (ctx.path === '/run' || ctx.path === '/runs')) {
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: string; ids?: string[] };
    // /runs {ids}: every task queued in one request, as POST /task/multiple_tasks does.
    await Promise.all((body.ids ?? [body.id as string]).map(start));
    ctx.body = { ok: true };
    return;
  }
  ctx.status = 404;
});

const server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.send?.({ port: typeof address === 'object' && address !== null ? address.port : 0 });
});
process.once('SIGTERM', () => {
  server.close();
  void Promise.all([runner.close(), store.close()]).then(() => process.exit(0));
});
