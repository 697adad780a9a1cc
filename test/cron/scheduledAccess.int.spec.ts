import { expect } from 'chai';
import { metadataFor } from '../../shared/events.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import type { AccessMaps } from '../../shared/access/permissions.ts';
import { loadSystemSettings } from '../../shared/task/loadSystemSettings.ts';
import { itemStream } from '../../command-side/catalog/item.ts';
import { itemCreatedEvent } from '../../command-side/catalog/itemCreatedEvent.ts';
import { newLoopMemory, schedulerCycle, type CronDeps, type LoopMemory } from '../../command-side/cron/schedulerCycle.ts';
import type { ExecuteTaskMessage } from '../../command-side/task/dispatchConnection.ts';
import { cycleBed, NOW, type CycleBed } from './cycleFixture.ts';

const USER: Laui = '65a0000000000000000000a1';

/**
 * Issue 19: a scheduled run acts with the rights of the task's creator, checked at every cycle: a
 * creator who cannot VIEW what the task references (never could, or lost it) gets no run.
 */
describe('scheduler cycle: scheduled runs act with the task creator\'s rights (issue 19)', function () {
  this.timeout(30_000);
  let bed: CycleBed;
  let memory: LoopMemory;

  beforeEach(async () => {
    bed = await cycleBed();
    memory = newLoopMemory();
  });
  afterEach(async () => bed.stop());

  const cycle = async (deps: CronDeps) => {
    const project = await bed.items.get(bed.project);
    if (!project) throw new Error('project missing');
    return schedulerCycle(deps, project, await loadSystemSettings(deps), memory, async () => undefined);
  };
  const viewers = (who: Laui | null): AccessMaps => ({ owners: {}, editors: {}, viewers: who ? { [who]: 'true' } : {} });
  /** An item written by USER (its created_by), readable by `reader`. */
  const create = async (itemType: string, name: string, parent: { laui: Laui; type: string }, fields: Record<string, unknown>, reader: Laui | null) => {
    const laui = newLaui(NOW);
    const event = itemCreatedEvent({ laui, itemType, name, parent, fields, access: viewers(reader), metadata: metadataFor(USER, NOW, 'test') });
    await bed.store.append(itemStream(laui), [event], 'no_stream');
    return laui;
  };
  /** A due hourly task created by USER, like the fixture's, on its own operator and connection. */
  const dueTask = async (name: string, canView: { connection: boolean; operator: boolean }) => {
    const template = await bed.task(`${name}-template`, await bed.connection(`${name}-unused`, 1), 1, { end_date: '2024-06-01T00:31:00.000Z' });
    await bed.settle();
    const fields = { ...(await bed.items.get(template)) } as Record<string, unknown>;
    const project = { laui: bed.project, type: 'folder.project' };
    const connection = await create('connection', `${name}-db`, project, { content: {}, max_parallelism: 1 }, canView.connection ? USER : null);
    const operator = await create('operator', `${name}.operator`, project, { codeblock: { language: 'javascript', code: 'export function run() {}' } }, canView.operator ? USER : null);
    const keep = ['project_laui', 'account_laui', 'frequency', 'start_date', 'state', 'logical_date', 'next_run_date', 'payload'];
    const task = await create(
      'task',
      name,
      { laui: String(fields.parent_laui), type: 'folder.workflow' },
      { ...Object.fromEntries(keep.map((key) => [key, fields[key]])), end_date: '2024-07-01T00:00:00.000Z', operator_laui: operator, connection_laui: connection },
      USER,
    );
    await bed.settle();
    return { task, connection };
  };

  it('given a due task whose creator cannot VIEW its connection or its operator, when a cycle runs, then it is not claimed nor dispatched and the refusal is logged once', async () => {
    const noConnection = await dueTask('no-connection', { connection: false, operator: true });
    const noOperator = await dueTask('no-operator', { connection: true, operator: false });
    const deps = bed.deps();
    const outcome = await cycle(deps);
    await cycle(deps);
    await bed.settle();

    expect(outcome.dispatched).to.deep.equal([]);
    expect(deps.bus.published).to.deep.equal([]);
    for (const { task } of [noConnection, noOperator]) expect(await bed.items.get(task)).to.include({ state: 'scheduled' });
    const refusals = bed.logs.filter((entry) => entry.step === 'access');
    expect(refusals.map((entry) => entry.task_laui)).to.have.members([noConnection.task, noOperator.task]);
    expect(String(refusals.find((entry) => entry.task_laui === noConnection.task)?.message)).to.include(`Access denied: user ${USER} cannot VIEW ${noConnection.connection}`);
  });

  it('given a due task whose creator can VIEW what it references, when a cycle runs, then it is dispatched on the creator\'s behalf (run_by, the message\'s user)', async () => {
    const { task } = await dueTask('allowed', { connection: true, operator: true });
    const deps = bed.deps();
    const outcome = await cycle(deps);
    await bed.settle();

    expect(outcome.dispatched).to.deep.equal([task]);
    expect(await bed.items.get(task)).to.include({ state: 'queued_in_redis', run_by: USER });
    const [message] = deps.bus.published.map((entry) => entry.value as ExecuteTaskMessage);
    expect(message?.user_laui).to.equal(USER);
  });
});
