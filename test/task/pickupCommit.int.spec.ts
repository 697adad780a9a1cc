import { expect } from 'chai';
import type { EventStore, StreamAppend } from '../../shared/event-store/EventStore.ts';
import { startTestService, type TestService } from '../support/testService.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { catalogClient, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';
import { interceptAppends } from '../support/interceptAppends.ts';

const PY_QUICK = 'def run(connection, payload, context):\n    return None\n\ndef check_completion(connection, payload, context):\n    return {"status": "success"}\n';
const PY_SLOW = 'import time\n\ndef run(connection, payload, context):\n    time.sleep(1.5)\n    return None\n\ndef check_completion(connection, payload, context):\n    return {"status": "success"}\n';

type Task = Record<string, unknown> & { state: string };

/**
 * WORKER_PICKUP_COMMIT_DEFER_MS (issue 34): a run that ends before its pick-up's commit is due
 * records the pick-up with its end, in one commit; with 0 the pick-up is committed as the run
 * starts. Either way the task's history holds every transition, in order. The commits are read
 * from the appends themselves (the store as the service uses it), one list of event types per
 * commit of the task's stream.
 */
for (const deferMs of ['60000', '0']) {
  describe(`a run's pick-up commit (WORKER_PICKUP_COMMIT_DEFER_MS=${deferMs})`, function () {
    this.timeout(60_000);
    let svc: TestService;
    let admin: CatalogClient;
    let bed: TaskBed;
    const commits: Array<{ streams: string[]; types: Map<string, string[]> }> = [];
    const record = (appends: ReadonlyArray<StreamAppend>) => {
      commits.push({ streams: appends.map((append) => append.streamId), types: new Map(appends.map((append) => [append.streamId, append.events.map((event) => event.type)])) });
    };

    before(async () => {
      svc = await startTestService({ WORKER_PICKUP_COMMIT_DEFER_MS: deferMs }, { eventStoreView: (store: EventStore) => interceptAppends(store, record) });
      admin = catalogClient(svc, (await svc.login()).token);
      bed = await taskBed(admin, `pickup-${deferMs}`, { name: 'c', content: {}, max_parallelism: 2 });
    });
    after(async () => svc.stop());

    const runNew = async (name: string, code: string) => {
      const operator = await admin.createOk({ item_type: 'operator', name: `${name}.operator`, parent_laui: bed.tree.folders.operator, codeblock: { language: 'python', code } });
      const reply = await svc.client().post('/api/v1/task/run', { json: bed.taskBody(name, operator), token: admin.token });
      expect(reply.status, reply.text).to.equal(200);
      return (reply.json as { item_laui: string }).item_laui;
    };
    /** The commits that wrote the task's stream: its event types in each, and every stream the commit wrote. */
    const taskCommits = (laui: string) =>
      commits.filter((commit) => commit.types.has(`item-${laui}`)).map((commit) => ({ types: commit.types.get(`item-${laui}`) as string[], streams: commit.streams }));

    it('given a quick run, when it ends, then its history holds every transition in order, and the pick-up is committed with the end only when its commit was deferred', async () => {
      const laui = await runNew('quick', PY_QUICK);

      await waitForItem<Task>(admin, laui, (task) => task.state === 'success', 30_000);
      const history = (await svc.service.eventStore.readStream(`item-${laui}`)).map((event) => event.type);
      expect(history.slice(-4)).to.deep.equal(['TaskQueued', 'TaskDispatched', 'TaskStarted', 'TaskSucceeded']);
      const started = taskCommits(laui).find((commit) => commit.types.includes('TaskStarted'));
      if (deferMs === '0') {
        expect(started?.types).to.deep.equal(['TaskStarted']);
      } else {
        // One commit: the pick-up, the end, and the slot's release in the connection's queue.
        expect(started?.types).to.deep.equal(['TaskStarted', 'TaskSucceeded']);
        expect(started?.streams).to.include(`queue-${bed.connection}`);
      }
    });

    it('given a run reset while its operator runs, when the operator ends, then nothing of that run is recorded after the reset', async () => {
      const laui = await runNew('reset', PY_SLOW);
      await waitForItem<Task>(admin, laui, (task) => task.state === 'queued_in_redis' || task.state === 'running', 30_000);
      await new Promise((resolve) => setTimeout(resolve, 300));

      const reset = await svc.client().post(`/api/v1/task/dangerously_reset/${laui}`, { token: admin.token });
      expect(reset.status, reset.text).to.equal(200);
      await new Promise((resolve) => setTimeout(resolve, 2500));

      const history = (await svc.service.eventStore.readStream(`item-${laui}`)).map((event) => event.type);
      expect(history.at(-1)).to.equal('TaskReset');
      expect((await waitForItem<Task>(admin, laui, () => true, 5_000)).state).to.equal('scheduled');
    });
  });
}
