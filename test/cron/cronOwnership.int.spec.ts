import { expect } from 'chai';
import type { Laui } from '../../shared/ids.ts';
import { InProcessBus } from '../../ops/bus/InProcessBus.ts';
import { MemoryReadStore } from '../../projections/read-store/MemoryReadStore.ts';
import { cronLiveness } from '../../projections/cron/cronLiveness.ts';
import { sleep, waitUntil } from '../support/waitUntil.ts';
import { itemStream } from '../../command-side/catalog/item.ts';
import { busCronOwnership, createCronScheduler, type CronScheduler } from '../../command-side/cron/cronScheduler.ts';
import { cycleBed, withFindHook, type CycleBed } from './cycleFixture.ts';

type Changes = { changes?: Record<string, unknown> };

/**
 * Fixed project LAUIs: the in-process bus spreads keys over two members by hash, and these split
 * four and four, so each scheduler gets some (a guard below says so if the hash ever changes).
 */
/** How long a condition is waited for (a loaded machine); "at once" is told by the hour-long supervisor tick, not by this. */
const WAIT_MS = 60_000;

const PROJECTS: ReadonlyArray<Laui> = Array.from({ length: 8 }, (_, index) => `65b0000000000000000000${String(index + 1).padStart(2, '0')}`);

/**
 * Two scheduler "processes" (each its own view of the log, queue handler and recording bus) on
 * one event store and one in-process bus whose key ownership (topic cron-ownership, key =
 * project_laui) says which scheduler loops which project. Heartbeats are either shared (as in a
 * MongoDB collection) or each process's own (in memory, as the service keeps them today).
 */
describe('cron schedulers sharing projects by the bus ownership', function () {
  this.timeout(180_000);
  let bed: CycleBed;
  let bus: InProcessBus;
  let running: CronScheduler[] = [];
  /** The first task of each project, due (two runs behind) when the schedulers start. */
  let firstTasks: Laui[] = [];
  let projects: Array<{ laui: Laui; task(name: string, runsBehind: number): Promise<Laui> }> = [];

  beforeEach(async () => {
    bed = await cycleBed();
    bus = new InProcessBus();
    running = [];
    projects = [];
    for (const [index, laui] of PROJECTS.entries()) projects.push(await bed.startedProject(`project-${index}`, laui));
    firstTasks = await Promise.all(projects.map((project) => project.task('first', 2)));
    await bed.settle();
  });

  afterEach(async () => {
    await Promise.all(running.map((scheduler) => scheduler.stop()));
    await bus.close();
    await bed.stop();
  });

  const start = (prefix: string, superviseMs: number, heartbeats: 'shared' | 'own' = 'shared') => {
    const own = bed.deps();
    // Each supervisor pass lists the project folders once: counted, so that "many passes later" is a count, not a time.
    const counted = { passes: 0 };
    const items = withFindHook(own.items, (options) => {
      if (options?.where?.item_type === 'folder.project') counted.passes += 1;
    });
    const deps = { ...own, items, ...(heartbeats === 'own' ? { liveness: cronLiveness(new MemoryReadStore()) } : {}) };
    const scheduler = createCronScheduler(deps, { superviseMs, ownerPrefix: prefix, ownership: busCronOwnership(bus) });
    scheduler.start();
    running.push(scheduler);
    return { scheduler, deps, counted };
  };
  const sorted = (lauis: ReadonlyArray<Laui>) => [...lauis].sort();
  const claimsOf = async (laui: Laui) =>
    (await bed.store.readStream(itemStream(laui))).filter((event) => (event.data as Changes).changes?.state === 'queued_for_connection').length;
  /** Deadlines only stop a test that would never pass: generous for a loaded machine. */
  const allClaimed = async (tasks: ReadonlyArray<Laui>, timeoutMs = WAIT_MS) => {
    const deadline = Date.now() + timeoutMs;
    for (const task of tasks) {
      while ((await claimsOf(task)) === 0) {
        if (Date.now() > deadline) throw new Error(`task ${task} was never claimed`);
        await sleep(20);
      }
    }
  };
  /** Each project looped by exactly one of the two, together every project, each some. */
  const split = (one: CronScheduler, two: CronScheduler): boolean => {
    const mine = one.looping();
    const theirs = two.looping();
    return mine.length > 0 && theirs.length > 0 && mine.every((laui) => !theirs.includes(laui)) && sorted([...mine, ...theirs]).join() === sorted(PROJECTS).join();
  };

  it('given started crons in eight projects and two schedulers on one bus that cannot see each other\'s heartbeats, when they supervise, then each project is looped by exactly one scheduler, together all, and each due run is dispatched once', async () => {
    // Each would take the other's crons for dead and loop every project, were it not for the ownership.
    const a = start('a', 30, 'own');
    const b = start('b', 30, 'own');

    await waitUntil(() => split(a.scheduler, b.scheduler), 'the two schedulers split the projects', WAIT_MS);
    const aProjects = sorted(a.scheduler.looping());
    // Still split the same way many supervisor passes later: no project changes hands nor gets a second loop.
    const [aPasses, bPasses] = [a.counted.passes, b.counted.passes];
    await waitUntil(() => a.counted.passes >= aPasses + 10 && b.counted.passes >= bPasses + 10, 'ten more passes of each supervisor', WAIT_MS);
    expect(sorted(a.scheduler.looping())).to.deep.equal(aProjects);
    expect(split(a.scheduler, b.scheduler), 'still split').to.equal(true);
    for (const laui of PROJECTS) {
      const [looping, idle] = aProjects.includes(laui) ? [a, b] : [b, a];
      expect((await looping.deps.liveness.last(laui))?.owner, `heartbeat of ${laui} where it is looped`).to.match(/^[ab]:/);
      expect(await idle.deps.liveness.last(laui), `heartbeat of ${laui} where it is not`).to.equal(null);
    }

    await allClaimed(firstTasks);
    await sleep(300);
    for (const task of firstTasks) expect(await claimsOf(task), `claims of ${task}`).to.equal(1);
    const published = [...a.deps.bus.published, ...b.deps.bus.published].map((message) => message.key);
    expect(sorted(published)).to.deep.equal(sorted(firstTasks));
  });

  it('given one scheduler looping every project, when a second joins, then it hands over the second one\'s projects at once; when the second stops, it takes them back at once and no run is dispatched twice', async () => {
    // Its supervisor ticks once an hour: whatever it does within this test, an ownership change made it do.
    const a = start('a', 3_600_000);
    await waitUntil(() => a.scheduler.looping().length === PROJECTS.length, 'the only scheduler loops every project', WAIT_MS);
    await allClaimed(firstTasks);

    const b = start('b', 30);
    await waitUntil(() => split(a.scheduler, b.scheduler), 'the first hands the projects of the second over', WAIT_MS);
    const bProjects = sorted(b.scheduler.looping());

    await b.scheduler.stop();
    running = running.filter((scheduler) => scheduler !== b.scheduler);
    await waitUntil(() => a.scheduler.looping().length === PROJECTS.length, 'the first takes every project back', WAIT_MS);
    expect(b.scheduler.looping()).to.deep.equal([]);

    // Runs due after the handover are dispatched by the first scheduler's loops, once each.
    const later = await Promise.all(projects.map((project) => project.task('later', 1)));
    await bed.settle();
    await allClaimed(later);
    await sleep(300);
    for (const task of [...firstTasks, ...later]) expect(await claimsOf(task), `claims of ${task}`).to.equal(1);
    for (const task of later) {
      expect(a.deps.eventStore.appends.get(itemStream(task)) ?? 0, `appends of the first scheduler to ${task}`).to.be.greaterThan(0);
      expect(b.deps.eventStore.appends.get(itemStream(task)) ?? 0, `appends of the stopped scheduler to ${task}`).to.equal(0);
    }
    expect(bProjects.length, 'the second scheduler had projects to hand back').to.be.greaterThan(0);
  });
});
