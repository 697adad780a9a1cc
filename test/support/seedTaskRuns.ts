import { join } from 'node:path';
import { metadataFor, type EventToAppend } from '../../shared/events.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import { openSqliteEventStore } from '../../ops/event-store/sqlite/SqliteEventStore.ts';
import { itemCreatedEvent } from '../../command-side/catalog/itemCreatedEvent.ts';

/**
 * A history of task runs written straight into a fresh DATA_DIR's event log (as seedLargeFolder
 * does for items): `tasks` tasks on one connection, run over and over until the log holds about
 * `events` events. A run is the seven events the service writes: queued, leased, dispatched,
 * started, succeeded and its slot released (the task's stream and the connection's queue). The
 * read models stay small (the tasks and the connection) however long the history: what a restart
 * from a snapshot no longer replays.
 */
export const seedTaskRuns = async (dataDir: string, options: { events: number; tasks: number }): Promise<{ events: number; runs: number }> => {
  const store = openSqliteEventStore({ file: join(dataDir, 'events.sqlite'), synchronous: 'normal' });
  const metadata = metadataFor(null, new Date(), 'seed');
  const access = { owners: {}, editors: {}, viewers: {} };
  const created = (laui: Laui, itemType: string, name: string, parent: { laui: Laui; type: string } | null, fields: Record<string, unknown>): EventToAppend =>
    itemCreatedEvent({ laui, itemType, name, parent, fields, access, metadata });
  try {
    const account = newLaui();
    const project = newLaui();
    const connection = newLaui();
    await store.append(`item-${account}`, [created(account, 'folder.account', 'runs', null, {})], 'no_stream');
    await store.append(`item-${project}`, [created(project, 'folder.project', 'history', { laui: account, type: 'folder.account' }, {})], 'no_stream');
    await store.append(`item-${connection}`, [created(connection, 'connection', 'conn', { laui: project, type: 'folder.project' }, { content: {}, max_parallelism: 64 })], 'no_stream');
    const tasks = Array.from({ length: options.tasks }, () => ({ laui: newLaui(), version: 1 }));
    for (const [index, task] of tasks.entries()) {
      await store.append(`item-${task.laui}`, [created(task.laui, 'task', `t-${index}`, { laui: project, type: 'folder.project' }, { connection_laui: connection, state: 'scheduled' })], 'no_stream');
    }
    // Ten runs of every task per round: one append per task and one for the queue, a round at a time.
    const runsPerRound = 10;
    let events = 3 + tasks.length;
    let runs = 0;
    const change = (task: { version: number }, type: string, from: string, to: string, changes: Record<string, unknown>, extra: Record<string, unknown> = {}): EventToAppend => ({
      type,
      data: { from, to, changes: { state: to, ...changes }, version: ++task.version, revision_laui: null, ...extra },
      metadata,
    });
    while (events < options.events) {
      const queue: EventToAppend[] = [];
      const appends: Array<Promise<unknown>> = [];
      for (const task of tasks) {
        const own: EventToAppend[] = [];
        for (let run = 0; run < runsPerRound; run += 1) {
          const dispatch = newLaui();
          const session = `s-${dispatch}`;
          const at = new Date().toISOString();
          queue.push({ type: 'TaskEnqueued', data: { task_laui: task.laui, priority: 0, sort_values: [], at }, metadata });
          own.push(change(task, 'TaskQueued', 'scheduled', 'queued_for_connection', {}));
          queue.push({ type: 'TaskLeased', data: { task_laui: task.laui, dispatch_id: dispatch, session_id: session, at }, metadata });
          own.push(change(task, 'TaskDispatched', 'queued_for_connection', 'queued_in_redis', { task_instance: dispatch, session_id: session }, { execution_id: dispatch, session_id: session }));
          own.push(change(task, 'TaskStarted', 'queued_in_redis', 'running', { last_heartbeat: at }));
          own.push(change(task, 'TaskSucceeded', 'running', 'success', { last_run_output: { status: 'success', rows: runs }, last_run_date: at }));
          queue.push({ type: 'TaskSlotReleased', data: { task_laui: task.laui, dispatch_id: dispatch, reason: 'finished', at }, metadata });
          runs += 1;
        }
        events += own.length;
        appends.push(store.append(`item-${task.laui}`, own, 'any'));
      }
      events += queue.length;
      appends.push(store.append(`queue-${connection}`, queue, 'any'));
      await Promise.all(appends);
    }
    return { events, runs };
  } finally {
    await store.close();
  }
};
