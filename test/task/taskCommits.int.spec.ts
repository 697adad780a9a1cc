import { expect } from 'chai';
import type { EventStore, RecordedEvent } from '../../shared/event-store/EventStore.ts';
import { startTestService, type TestService } from '../support/testService.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { catalogClient, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';
import { withoutAtomicAppends } from '../support/withoutAtomicAppends.ts';
import { interceptAppends } from '../support/interceptAppends.ts';

const PY_QUICK = `
def run(connection, payload, context):
    return None

def check_completion(connection, payload, context):
    return {"status": "success"}
`;

const PY_FAILED = `
def run(connection, payload, context):
    return None

def check_completion(connection, payload, context):
    return {"status": "failed"}
`;

const PY_DS = `
def run(connection, payload, context):
    return None

def check_completion(connection, payload, context):
    return {"status": "success", "ds": payload["day"]}
`;

type Task = Record<string, unknown> & { state: string; retry_number?: number };

/** Runs once, just before the next append that writes `queued_in_redis` to `stream` (either kind of append). */
let beforeQueuedInRedis: { stream: string; run: () => Promise<void> } | null = null;
const hooked = (store: EventStore): EventStore =>
  interceptAppends(store, async (appends) => {
    const hook = beforeQueuedInRedis;
    const due = appends.some(
      (append) => append.streamId === hook?.stream && append.events.some((event) => (event.data as { changes?: { state?: unknown } }).changes?.state === 'queued_in_redis'),
    );
    if (!hook || !due) return;
    beforeQueuedInRedis = null;
    await hook.run();
  });
const TERMINAL = ['success', 'error', 'timeout', 'cancelled', 'fail'];

/**
 * A run's queue decisions and the task changes they call for (lease + queued_in_redis, terminal
 * state + release) commit together on a store with multi-stream transactions, and one after the
 * other on a store without them (EventStoreDB). Both paths must give the same runs.
 */
for (const [kind, view] of [
  ['with multi-stream transactions', undefined],
  ['one stream at a time', withoutAtomicAppends],
] as const) {
  describe(`task commits on a store ${kind}`, function () {
    this.timeout(60_000);
    let svc: TestService;
    let admin: CatalogClient;
    let bed: TaskBed;

    const operator = (name: string, code: string) =>
      admin.createOk({ item_type: 'operator', name: `${name}.operator`, parent_laui: bed.tree.folders.operator, codeblock: { language: 'python', code } });
    const runNew = async (name: string, operatorLaui: string, extra: Record<string, unknown> = {}) => {
      const reply = await svc.client().post('/api/v1/task/run', { json: bed.taskBody(name, operatorLaui, extra), token: admin.token });
      expect(reply.status, reply.text).to.equal(200);
      return (reply.json as { item_laui: string }).item_laui;
    };
    const states = (events: RecordedEvent[]) => events.flatMap((event) => ((event.data as { changes?: { state?: string } }).changes?.state ? [(event.data as { changes: { state: string } }).changes.state] : []));

    before(async () => {
      svc = await startTestService({}, { eventStoreView: (store: EventStore) => hooked(view ? view(store) : store) });
      admin = catalogClient(svc, (await svc.login()).token);
      bed = await taskBed(admin, 'commits-co', { name: 'target', content: {}, max_parallelism: 3 });
    });
    after(async () => svc.stop());

    it('given 24 runs racing on max_parallelism 3, when they finish, then each went through every state in order and never more than 3 ran', async () => {
      const op = await operator('quick', PY_QUICK);

      const lauis = await Promise.all(Array.from({ length: 24 }, (_, index) => runNew(`race-${index}`, op)));

      for (const laui of lauis) expect((await waitForItem<Task>(admin, laui, (task) => TERMINAL.includes(task.state), 30_000)).state).to.equal('success');
      await waitForItem<Record<string, unknown>>(admin, bed.connection, (item) => item.current_parallelism === 0 && item.in_queue === 0, 10_000);
      for (const laui of lauis) {
        const history = states(await svc.service.eventStore.readStream(`item-${laui}`));
        expect(history.filter((state) => state !== 'queued_for_connection')).to.deep.equal(['queued_in_redis', 'running', 'success']);
        expect(history[0]).to.equal('queued_for_connection');
      }
      const queue = await svc.service.eventStore.readStream(`queue-${bed.connection}`);
      let running = 0;
      let peak = 0;
      for (const event of queue) {
        running += event.type === 'TaskLeased' ? 1 : event.type === 'TaskSlotReleased' ? -1 : 0;
        peak = Math.max(peak, running);
      }
      expect(peak).to.equal(3);
      expect(running).to.equal(0);
    });

    it('given a run that fails, when it ends, then the error, its retry count and the freed slot are all recorded', async () => {
      const op = await operator('failing', PY_FAILED);

      const laui = await runNew('failing-task', op, { total_retries: 0 });

      const ended = await waitForItem<Task>(admin, laui, (task) => TERMINAL.includes(task.state), 30_000);
      expect(ended.state).to.equal('error');
      expect(ended.retry_number).to.equal(1);
      const metrics = await waitForItem<Record<string, unknown>>(admin, bed.connection, (item) => item.current_parallelism === 0, 10_000);
      expect(metrics.queue_running).to.deep.equal([]);
    });

    it('given a logical date changed by another writer just before the lease commits, when the task runs, then its payload is templated for the new date', async () => {
      const op = await operator('ds', PY_DS);
      const day = 24 * 60 * 60 * 1000;
      const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
      const laui = await admin.createOk({
        item_type: 'task',
        ...bed.taskBody('moved-at-lease', op, { frequency: '0 0 * * *', start_date: new Date(today - 7 * day).toISOString(), end_date: new Date(today + 30 * day).toISOString(), payload: { day: '{{ds}}' } }),
      });
      const moved = new Date(today - 12 * day);
      let updated = 0;
      beforeQueuedInRedis = {
        stream: `item-${laui}`,
        run: async () => {
          const reply = await svc.client().post(`/api/v1/task/update/${laui}`, { json: { logical_date: moved.toISOString() }, token: admin.token });
          expect(reply.status, reply.text).to.equal(200);
          updated += 1;
        },
      };

      const run = await svc.client().post('/api/v1/task/run', { json: { item_laui: laui }, token: admin.token });
      expect(run.status, run.text).to.equal(200);

      const done = await waitForItem<Task>(admin, laui, (task) => task.state === 'success', 30_000);
      expect(updated).to.equal(1);
      expect(done.last_run_output).to.deep.equal({ status: 'success', ds: moved.toISOString().slice(0, 10) });
      expect(done.logical_date).to.equal(new Date(moved.getTime() + day).toISOString());
    });

    if (!view) {
      it('given a run, when it is leased and when it ends, then its task change and the queue decision are written in one atomic run', async () => {
        const op = await operator('paired', PY_QUICK);

        const laui = await runNew('paired-task', op);

        await waitForItem<Task>(admin, laui, (task) => task.state === 'success', 30_000);
        await waitForItem<Record<string, unknown>>(admin, bed.connection, (item) => item.current_parallelism === 0, 10_000);
        const task = await svc.service.eventStore.readStream(`item-${laui}`);
        const queue = (await svc.service.eventStore.readStream(`queue-${bed.connection}`)).filter((event) => (event.data as { task_laui?: string }).task_laui === laui);
        const position = (events: RecordedEvent[], match: (event: RecordedEvent) => boolean) => events.find(match)?.position;
        const leased = position(queue, (event) => event.type === 'TaskLeased');
        const queuedForConnection = position(task, (event) => (event.data as { changes?: { state?: string } }).changes?.state === 'queued_for_connection');
        const success = position(task, (event) => (event.data as { changes?: { state?: string } }).changes?.state === 'success');
        const released = position(queue, (event) => event.type === 'TaskSlotReleased');
        // An atomic run's rows are consecutive in the log: lease, then the task's two steps;
        // the terminal state, then the release of its slot.
        expect(queuedForConnection).to.equal((leased as bigint) + 1n);
        expect(released).to.equal((success as bigint) + 1n);
      });
    }
  });
}
