import { expect } from 'chai';
import type { EventStore } from '../../shared/event-store/EventStore.ts';
import { startTestService, type TestService } from '../support/testService.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { delayedDelivery } from '../support/delayedDelivery.ts';
import { catalogClient, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';

const JS_QUICK = `
export function run() { return null; }
export function check_completion() { return { status: 'success' }; }
`;

const UNKNOWN = '65a0000000000000000000aa';

type Task = Record<string, unknown> & { state: string };

/** Issue 19: POST /task/run without item_laui whose validation fails saved the task anyway. */
describe('POST /task/run creating a task (HTTP, embedded service)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let admin: CatalogClient;
  let bed: TaskBed;
  let operator: string;

  const run = (body: Record<string, unknown>) => svc.client().post('/api/v1/task/run', { json: { item_type: 'task', ...body }, token: admin.token });
  const tasksNamed = async (name: string) =>
    ((await admin.search({ item_filter: { item_type: 'task', name, project_laui: bed.tree.project_laui } })).json as { items: Array<Record<string, unknown>> }).items;

  before(async () => {
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
    bed = await taskBed(admin, 'create-run-co', { name: 'c', content: {}, max_parallelism: 4 });
    operator = await admin.createOk({ item_type: 'operator', name: 'quick.operator', parent_laui: bed.tree.folders.operator, codeblock: { language: 'javascript', code: JS_QUICK } });
  });
  after(async () => svc.stop());

  it('given a missing operator, when run, then 422 and no task is left; resent with the right operator, then a new task runs with it', async () => {
    const failed = await run(bed.taskBody('typo-task', UNKNOWN));
    expect(failed.status, failed.text).to.equal(422);
    expect((failed.json as { detail: string }).detail).to.include(`operator item not found: ${UNKNOWN}`);
    expect(await tasksNamed('typo-task')).to.deep.equal([]);

    const fixed = await run(bed.taskBody('typo-task', operator));
    expect(fixed.status, fixed.text).to.equal(200);
    const laui = (fixed.json as { item_laui: string }).item_laui;
    const task = await waitForItem<Task>(admin, laui, (item) => item.state === 'success', 30_000);
    expect(task.operator_laui).to.equal(operator);
  });

  it('given a deleted connection, when run, then 422 and no task is left', async () => {
    const gone = await admin.createOk({ item_type: 'connection', name: 'gone', parent_laui: bed.tree.folders.connection, content: {} });
    expect((await admin.post('/delete', { item_laui: gone })).status).to.equal(200);
    const failed = await run(bed.taskBody('no-connection', operator, { connection_laui: gone }));
    expect(failed.status, failed.text).to.equal(422);
    expect(await tasksNamed('no-connection')).to.deep.equal([]);
  });

  it('given 10 identical create-and-run requests at once, when they race, then all answer 200 with one task', async () => {
    const replies = await Promise.all(Array.from({ length: 10 }, () => run(bed.taskBody('twins', operator))));
    expect(replies.map((reply) => reply.status), replies.map((reply) => reply.text).join('\n')).to.deep.equal(Array.from({ length: 10 }, () => 200));
    const lauis = new Set(replies.map((reply) => (reply.json as { item_laui: string }).item_laui));
    expect(lauis.size).to.equal(1);
    expect((await tasksNamed('twins')).map((item) => item.laui)).to.deep.equal([...lauis]);
  });
});

/**
 * The same race with a read model that applies a task's creation 300 ms late, as on a busy machine:
 * the losers' 409 comes long before the read model has the winner's task, so the existing task must
 * be found through the unique key's reservation, not by searching the read model.
 */
describe('POST /task/run creating a task, read model lagging (HTTP, embedded service)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let admin: CatalogClient;
  let bed: TaskBed;
  let operator: string;

  const lagging = (store: EventStore): EventStore =>
    delayedDelivery(store, async (event) => {
      const data = event.data as { item_type?: unknown; name?: unknown };
      if (event.type === 'ItemCreated' && data.item_type === 'task' && data.name === 'lagging-twins') await new Promise((resolve) => setTimeout(resolve, 300));
    });

  before(async () => {
    svc = await startTestService({}, { eventStoreView: lagging });
    admin = catalogClient(svc, (await svc.login()).token);
    bed = await taskBed(admin, 'lagging-co', { name: 'c', content: {}, max_parallelism: 4 });
    operator = await admin.createOk({ item_type: 'operator', name: 'quick.operator', parent_laui: bed.tree.folders.operator, codeblock: { language: 'javascript', code: JS_QUICK } });
  });
  after(async () => svc.stop());

  it('given 5 identical create-and-run requests at once, when they race, then all answer 200 with the one task', async () => {
    const replies = await Promise.all(
      Array.from({ length: 5 }, () => svc.client().post('/api/v1/task/run', { json: { item_type: 'task', ...bed.taskBody('lagging-twins', operator) }, token: admin.token })),
    );
    expect(replies.map((reply) => reply.status), replies.map((reply) => reply.text).join('\n')).to.deep.equal([200, 200, 200, 200, 200]);
    expect(new Set(replies.map((reply) => (reply.json as { item_laui: string }).item_laui)).size).to.equal(1);
  });
});
