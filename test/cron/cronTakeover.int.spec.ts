import { expect } from 'chai';
import { fixedClock } from '../../shared/clock.ts';
import { metadataFor } from '../../shared/events.ts';
import type { LogEntry, Logger } from '../../shared/ports/Logger.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import { MemoryEventStore } from '../support/MemoryEventStore.ts';
import { MemoryReadStore } from '../../projections/read-store/MemoryReadStore.ts';
import { ProjectionRunner } from '../../projections/runner/ProjectionRunner.ts';
import { ITEMS, itemsProjection } from '../../projections/catalog/itemsProjection.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { cronLiveness, type CronLiveness } from '../../projections/cron/cronLiveness.ts';
import { itemStream } from '../../command-side/catalog/item.ts';
import { startSchedulers, type CronScheduler } from '../../command-side/cron/cronScheduler.ts';
import type { CronDeps } from '../../command-side/cron/schedulerCycle.ts';
import { MAX_FAILED_CYCLES } from '../../command-side/cron/ProjectCronLoop.ts';
import { withFindHook } from './cycleFixture.ts';

const PROJECT = '65a0000000000000000000a1';

const start = new Date('2024-06-10T12:00:00.000Z');

/**
 * The supervisor and loops on the real memory adapters with a hand-moved clock. A project with no
 * tasks needs only the items, the event store, the heartbeats, the clock and a logger, so the other
 * task ports are left out of this deps object.
 */
describe('cron supervisor: heartbeat staleness, takeover and the ERROR status', function () {
  this.timeout(120_000);
  let store: MemoryEventStore;
  let runner: ProjectionRunner;
  let items: Collection<ItemDoc>;
  let liveness: CronLiveness;
  let scheduler: CronScheduler | null = null;
  const clock = fixedClock(start);
  const logs: LogEntry[] = [];
  const logger: Logger = { log: (entry) => void logs.push(entry), flush: async () => undefined };
  /**
   * Waits for a condition. The clock is moved by hand, so "at once" here means "before the clock
   * moved", not within some milliseconds: the deadline only stops a test that would never pass, and
   * is generous for a loaded machine.
   */
  const until = async (condition: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error('condition not reached');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const statusOf = async () => ((await items.get(PROJECT))?.folder_metadata as { cron_status?: string; error?: string } | undefined) ?? {};

  beforeEach(async () => {
    store = new MemoryEventStore();
    const readStore = new MemoryReadStore();
    runner = new ProjectionRunner({ name: 'test', eventStore: store, readStore, projections: [itemsProjection] });
    await runner.start();
    items = readStore.collection<ItemDoc>(ITEMS, itemsProjection.indexes);
    liveness = cronLiveness(readStore);
    clock.set(start);
    logs.length = 0;
    const metadata = metadataFor(null, start, 'test');
    const fields = { folder_metadata: { cron_status: 'RUNNING', latest_heartbeat: start.toISOString(), start_date: start.toISOString(), stop_date: null, error: null } };
    const created = await store.append(
      itemStream(PROJECT),
      [{ type: 'ItemCreated', data: { laui: PROJECT, item_type: 'folder.project', name: 'main', parent_laui: null, parent_type: null, link_laui: null, is_root: false, fields, access: { owners: {}, editors: {}, viewers: {} }, version: 1, revision_laui: PROJECT }, metadata }],
      'no_stream',
    );
    await runner.waitFor(created.position, 60_000);
  });
  afterEach(async () => {
    await scheduler?.stop();
    scheduler = null;
    await runner.stop();
  });

  const deps = (collection: Collection<ItemDoc> = items, beats: CronLiveness = liveness) => ({ eventStore: store, items: collection, liveness: beats, clock, logger }) as unknown as CronDeps;
  /** The items with a count of the supervisor's passes (each lists the project folders once). */
  const countingPasses = () => {
    const counted = { passes: 0, items: withFindHook(items, (options) => {
      if (options?.where?.item_type === 'folder.project') counted.passes += 1;
    }) };
    return counted;
  };

  it('given a loop of another process beating, when supervised, then no loop starts until its heartbeat is older than 3 intervals', async () => {
    await liveness.beat(PROJECT, start, 'other-process');
    clock.set(new Date(start.getTime() + 14_000)); // 3 intervals of 5 s have not passed
    const counted = countingPasses();
    scheduler = startSchedulers(deps(counted.items), { superviseMs: 30, ownerPrefix: 'here' });
    // Several passes saw the beat (counted, not timed: a loaded machine makes fewer per second).
    await until(async () => counted.passes >= 5);
    expect((await liveness.last(PROJECT))?.owner).to.equal('other-process');
    clock.set(new Date(start.getTime() + 16_000));
    await until(async () => (await liveness.last(PROJECT))?.owner.startsWith('here:') === true);
    expect(logs.some((entry) => String(entry.message).includes('other-process is dead'))).to.equal(true);
    expect((await statusOf()).cron_status).to.equal('RUNNING');
  });

  it('given a RUNNING cron with no heartbeat at all (a restart), when supervised, then a loop resumes it at once', async () => {
    scheduler = startSchedulers(deps(), { superviseMs: 30, ownerPrefix: 'fresh' });
    await until(async () => (await liveness.last(PROJECT))?.owner.startsWith('fresh:') === true);
  });

  it('given a STOP that no loop will finish (no heartbeat anywhere), when supervised, then the cron is STOPPED', async () => {
    const stop = await store.append(
      itemStream(PROJECT),
      [{ type: 'ItemUpdated', data: { changes: { folder_metadata: { cron_status: 'STOP', latest_heartbeat: start.toISOString() } }, version: 1, revision_laui: null }, metadata: metadataFor(null, start, 'test') }],
      'any',
    );
    await runner.waitFor(stop.position, 60_000);
    scheduler = startSchedulers(deps(), { superviseMs: 30, ownerPrefix: 'idle' });
    await until(async () => (await statusOf()).cron_status === 'STOPPED');
    expect(await liveness.last(PROJECT)).to.equal(null);
  });

  it('given a loop of this process that stopped beating, when supervised, then it is abandoned and a new loop takes over', async () => {
    // The loop hangs: from the moment it is chosen, its beats are lost (its passes go on, every 5 s of
    // real time, so a deadline shorter than that was the only thing that kept it from beating again).
    const hung: { owner?: string } = {};
    const hanging: CronLiveness = {
      beat: (projectLaui, at, owner) => (owner === hung.owner ? Promise.resolve() : liveness.beat(projectLaui, at, owner)),
      last: (projectLaui) => liveness.last(projectLaui),
      forget: (projectLaui) => liveness.forget(projectLaui),
    };
    scheduler = startSchedulers(deps(items, hanging), { superviseMs: 30, ownerPrefix: 'local' });
    await until(async () => (await liveness.last(PROJECT))?.owner.startsWith('local:') === true);
    const stuck = (await liveness.last(PROJECT))?.owner;
    hung.owner = stuck;
    // On the clock 16 s pass at once (3 intervals of 5 s), so its last heartbeat is dead.
    clock.set(new Date(start.getTime() + 16_000));
    await until(async () => {
      const owner = (await liveness.last(PROJECT))?.owner;
      return owner !== undefined && owner !== stuck;
    });
    expect(logs.some((entry) => String(entry.message) === `Cron loop ${String(stuck)} stopped beating; taking over`)).to.equal(true);
  });

  it('given cycles that keep failing, when the loop has failed MAX_FAILED_CYCLES times, then the cron is ERROR with the message', async () => {
    // Listing the project's tasks fails; everything else reads the real collection.
    const failing = withFindHook(items, (options) => {
      if (options?.where?.item_type === 'task') throw new Error('task index unavailable');
    });
    scheduler = startSchedulers(deps(failing), { superviseMs: 10_000, ownerPrefix: 'failing' });
    // A failed cycle is retried after 1 s of real time: MAX_FAILED_CYCLES of them, then ERROR.
    await until(async () => (await statusOf()).cron_status === 'ERROR');
    expect(await statusOf()).to.include({ cron_status: 'ERROR', error: 'task index unavailable' });
    expect(logs.filter((entry) => String(entry.message).startsWith('Scheduler cycle failed'))).to.have.length(MAX_FAILED_CYCLES);
  });
});
