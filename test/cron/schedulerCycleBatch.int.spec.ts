import { expect } from 'chai';
import type { Laui } from '../../shared/ids.ts';
import type { EventStore } from '../../shared/event-store/EventStore.ts';
import { loadSystemSettings } from '../../shared/task/loadSystemSettings.ts';
import { queueHandler } from '../../command-side/queue/handler.ts';
import { queueOrder } from '../../command-side/queue/decide.ts';
import { queueStream } from '../../command-side/queue/queue.ts';
import { itemStream } from '../../command-side/catalog/item.ts';
import { newLoopMemory, schedulerCycle, type CronDeps } from '../../command-side/cron/schedulerCycle.ts';
import { waitUntil } from '../support/waitUntil.ts';
import { cycleBed, type CycleBed } from './cycleFixture.ts';

type Changes = { changes?: Record<string, unknown> };

/**
 * The batched cycle on the memory adapters: due tasks are claimed one by one on their own streams,
 * then join their connection's queue in one commit per connection that also leases the free slots.
 */
describe('scheduler cycle: due tasks batched per connection', function () {
  this.timeout(30_000);
  let bed: CycleBed;

  beforeEach(async () => {
    bed = await cycleBed();
  });
  afterEach(async () => bed.stop());

  const cycle = async (deps: CronDeps) => {
    const project = await bed.items.get(bed.project);
    if (!project) throw new Error('project missing');
    return schedulerCycle(deps, project, await loadSystemSettings(deps), newLoopMemory(), async () => undefined);
  };
  const claimsOf = async (laui: Laui) =>
    (await bed.store.readStream(itemStream(laui))).filter((event) => (event.data as Changes).changes?.state === 'queued_for_connection').length;

  it('given 12 due tasks on one connection of max_parallelism 3, when a cycle runs, then one queue commit enqueues them all and leases the 3 oldest logical dates, the rest waiting in logical_date order', async () => {
    const connection = await bed.connection('db', 3);
    // Created newest run first, so arrival order and logical_date order disagree.
    const tasks: Laui[] = [];
    for (let index = 0; index < 12; index += 1) tasks.push(await bed.task(`t${index}`, connection, 1 + (index % 4)));
    const notDue = await bed.task('later', connection, -1);
    await bed.settle();
    const deps = bed.deps();

    const outcome = await cycle(deps);
    await bed.settle();

    expect(outcome.dispatched).to.deep.equal(tasks);
    expect(deps.eventStore.appends.get(queueStream(connection)), 'queue commits').to.equal(1);
    const queue = await deps.queue.state(connection);
    expect(queue.running.size).to.equal(3);
    expect(queue.waiting.size).to.equal(9);
    const logical = async (laui: Laui) => String((await bed.items.get(laui))?.logical_date);
    const runningDates = await Promise.all([...queue.running.keys()].map(logical));
    expect(runningDates.every((date) => date === '2024-06-10T07:00:00.000Z'), runningDates.join()).to.equal(true);
    const waitingInOrder = [...queue.waiting.values()].sort(queueOrder({ logical_date: 'ascending' }));
    const waitingDates = await Promise.all(waitingInOrder.map((entry) => logical(entry.taskLaui)));
    expect(waitingDates).to.deep.equal([...waitingDates].sort());
    for (const [laui, lease] of queue.running) {
      expect(await bed.items.get(laui)).to.include({ state: 'queued_in_redis', session_id: lease.sessionId });
    }
    for (const laui of queue.waiting.keys()) expect((await bed.items.get(laui))?.state).to.equal('queued_for_connection');
    expect(deps.bus.published.map((message) => message.key).sort()).to.deep.equal([...queue.running.keys()].sort());
    expect(await bed.items.get(connection)).to.include({ current_parallelism: 3, in_queue: 9 });
    expect((await bed.items.get(notDue))?.state).to.equal('scheduled');
    for (const laui of tasks) expect(await claimsOf(laui), laui).to.equal(1);
  });

  it('given two loops (two processes) cycling one project at once, when both run, then every due task is claimed and dispatched exactly once and no connection exceeds max_parallelism', async () => {
    const connections = [await bed.connection('a', 4), await bed.connection('b', 4)];
    const tasks: Laui[] = [];
    for (let index = 0; index < 30; index += 1) tasks.push(await bed.task(`t${index}`, connections[index % 3 === 0 ? 0 : 1] as Laui, 1 + (index % 3)));
    await bed.settle();
    // Each process writes to half the task streams only once the other has claimed the task there, so
    // each wins the other half's claims (by order, not by a delay): both loops see all 30 tasks due,
    // try to claim each, and race on both queues.
    const claimedThere = async (streamId: string) => {
      await waitUntil(async () => (await bed.store.readStream(streamId)).some((event) => (event.data as Changes).changes?.state === 'queued_for_connection'), `a claim on ${streamId}`);
    };
    const behindOn = (parity: number) => (streamId: string) => (tasks.findIndex((laui) => itemStream(laui) === streamId) % 2 === parity ? claimedThere(streamId) : undefined);
    const first = bed.deps({ holdAppends: behindOn(1) });
    const second = bed.deps({ holdAppends: behindOn(0) });

    const [one, two] = await Promise.all([cycle(first), cycle(second)]);
    await bed.settle();

    expect(one.dispatched).to.deep.equal(tasks.filter((_, index) => index % 2 === 0));
    expect(two.dispatched).to.deep.equal(tasks.filter((_, index) => index % 2 === 1));
    for (const laui of tasks) expect(await claimsOf(laui), laui).to.equal(1);
    let leased = 0;
    for (const [index, connection] of connections.entries()) {
      const events = await bed.store.readStream(queueStream(connection));
      // Arrivals: TaskEnqueued, or a TaskLeased carrying the arrival it was decided with.
      const enqueued = events.filter((event) => event.type === 'TaskEnqueued' || 'enqueued' in event.data).map((event) => (event.data as { task_laui: string }).task_laui);
      expect(new Set(enqueued).size, 'each task enqueued once').to.equal(enqueued.length);
      const queue = await queueHandler(bed.store).state(connection);
      expect(queue.running.size).to.equal(4);
      expect(queue.running.size + queue.waiting.size).to.equal(index === 0 ? 10 : 20);
      leased += queue.running.size;
    }
    const published = [...first.bus.published, ...second.bus.published].map((message) => message.key);
    expect(new Set(published).size).to.equal(published.length);
    expect(published).to.have.length(leased);
  });

  it('given a queue that refuses the batch, when a cycle runs, then every claim is released and the next cycle dispatches the tasks', async () => {
    const connection = await bed.connection('flaky', 2);
    const tasks = [await bed.task('x', connection, 1), await bed.task('y', connection, 2)];
    await bed.settle();
    const broken = bed.deps({
      queue: (eventStore: EventStore) => ({
        ...queueHandler(eventStore),
        decideManyAndDispatch: () => ({ decisions: (async function* () {})(), result: Promise.reject(new Error('queue unavailable')) }),
      }),
    });

    const failed = await cycle(broken);
    await bed.settle();

    expect(failed.dispatched).to.deep.equal([]);
    for (const laui of tasks) expect((await bed.items.get(laui))?.state).to.equal('scheduled');
    expect(bed.logs.filter((entry) => entry.step === 'dispatch' && String(entry.message).endsWith('could not be dispatched: queue unavailable'))).to.have.length(2);
    expect(await bed.store.readStream(queueStream(connection))).to.deep.equal([]);

    const retried = await cycle(bed.deps());
    await bed.settle();
    expect(retried.dispatched).to.deep.equal(tasks);
    for (const laui of tasks) expect((await bed.items.get(laui))?.state).to.equal('queued_in_redis');
  });

  it('given a write that fails unexpectedly mid-cycle, when the cycle runs, then it fails, and every claim it made is dispatched or released (none is stranded outside its queue)', async () => {
    const connection = await bed.connection('db', 2);
    const tasks: Laui[] = [];
    for (let index = 0; index < 8; index += 1) tasks.push(await bed.task(`t${index}`, connection, 1));
    await bed.settle();
    const broken = itemStream(tasks[3] as Laui);
    const deps = bed.deps({ failingAppends: (streamId) => streamId === broken });

    let failed: unknown = null;
    await cycle(deps).catch((error: unknown) => {
      failed = error;
    });
    await bed.settle();

    expect(String(failed)).to.include(`disk I/O error on ${broken}`);
    const queue = await deps.queue.state(connection);
    for (const laui of tasks) {
      const state = (await bed.items.get(laui))?.state;
      if (queue.running.has(laui)) expect(state, laui).to.equal('queued_in_redis');
      else if (queue.waiting.has(laui)) expect(state, laui).to.equal('queued_for_connection');
      else expect(state, laui).to.equal('scheduled');
    }
    expect(queue.running.size).to.equal(2);
    expect((await bed.items.get(tasks[3] as Laui))?.state).to.equal('scheduled');
  });
});
