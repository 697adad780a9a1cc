import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';
// Alice's operator wraps json.loads / JSON.parse (which sees each run's decrypted connection) and sets a marker; bob's reports his process and the marker.
import { POISONS_JSON_DECODING as POISON, PROBES_POISON as PROBE } from '../support/operatorSnippets.ts';

const ALICE_SECRET = 'alice-warehouse-password-31';
const BOB_SECRET = 'bob-warehouse-password-47';

/** `process`: a token each process draws once (in a run's sandbox every runtime is pid 1 of its own namespace). */
type Seen = { pid: number; process: string; marker: string | null; seen: string };
type Task = Record<string, unknown> & { state: string; last_run_session_id?: string; last_run_output: Seen };

interface Owner {
  laui: string;
  api: CatalogClient;
  operators: string;
  body(name: string, operator: string): Record<string, unknown>;
}

/**
 * Issue: reuse processes were shared by every reuse run of a language. Over HTTP, with two users
 * running reuse operators: a reuse process serves one operator of one user, and dies with a
 * revocation (here: the operator's access changed).
 */
describe('tasks: a reuse process serves one operator of one user, and dies with a revocation', function () {
  this.timeout(120_000);
  let svc: TestService;
  let alice: Owner;
  let bob: Owner;

  /** A user of their own account, workflow and connection (holding their password). */
  const owner = async (adminToken: string, name: string, secret: string): Promise<Owner> => {
    const user = await createUser(svc, adminToken, name);
    const api = catalogClient(svc, user.token);
    const tree = await api.bootstrap(`${name}-co`);
    const workflow = await api.createOk({ item_type: 'folder.workflow', name: 'wf', parent_laui: tree.folders.workflow });
    const connection = await api.createOk({ item_type: 'connection', name: `${name}.warehouse`, parent_laui: tree.folders.connection, content: { host: 'db.example', password: secret } });
    return {
      laui: user.laui,
      api,
      operators: tree.folders.operator,
      body: (taskName, operator) => ({ item_type: 'task', name: taskName, parent_laui: workflow, project_laui: tree.project_laui, account_laui: tree.account_laui, operator_laui: operator, connection_laui: connection }),
    };
  };

  /** Runs a task (a new one from a body, or an existing one again) as its user and returns what the operator answered. */
  const run = async (who: Owner, request: Record<string, unknown>): Promise<{ laui: string; seen: Seen }> => {
    const previous = typeof request.item_laui === 'string' ? ((await who.api.get({ item_laui: request.item_laui })).json as Task).last_run_session_id : undefined;
    const reply = await svc.client().post('/api/v1/task/run', { json: request, token: who.api.token });
    expect(reply.status, reply.text).to.equal(200);
    const laui = (reply.json as { item_laui: string }).item_laui;
    const done = await waitForItem<Task>(who.api, laui, (item) => item.state === 'success' && item.last_run_session_id !== previous, 40_000);
    return { laui, seen: done.last_run_output };
  };

  before(async () => {
    svc = await startTestService({ WORKER_POLL_INTERVAL_MS: '50' });
    const admin = (await svc.login()).token;
    alice = await owner(admin, 'alice', ALICE_SECRET);
    bob = await owner(admin, 'bob', BOB_SECRET);
  });
  after(async () => {
    await svc.stop();
  });

  for (const language of ['python', 'javascript'] as const) {
    it(`given alice's ${language} reuse operator that wrapped ${language === 'python' ? 'json.loads' : 'JSON.parse'}, when bob runs it and his own reuse operator, then his runs get other processes, unpoisoned, the wrapper never sees his connection, alice's runs reuse hers until her operator's access changes`, async () => {
      // Given: alice's reuse operator, which bob may use too, and bob's own reuse operator.
      const operator = await alice.api.createOk({ item_type: 'operator', name: `poison-${language}.operator`, parent_laui: alice.operators, codeblock: { language, code: POISON[language] }, reuse_process: true });
      const access = (change: 'add' | 'remove') => alice.api.post('/update', { item_laui: operator, access_patch: { [change]: { viewers: { [bob.laui]: 'true' } } } });
      expect((await access('add')).status).to.equal(200);
      const probe = await bob.api.createOk({ item_type: 'operator', name: `probe-${language}.operator`, parent_laui: bob.operators, codeblock: { language, code: PROBE[language] }, reuse_process: true });
      const first = await run(alice, alice.body(`alice-${language}`, operator));
      expect(first.seen.marker).to.equal(null);

      // When: bob runs alice's operator and his own, on his connection; then alice runs hers again.
      const same = (await run(bob, bob.body(`bob-same-${language}`, operator))).seen;
      const other = (await run(bob, bob.body(`bob-other-${language}`, probe))).seen;
      const again = (await run(alice, { item_type: 'task', item_laui: first.laui })).seen;

      // Then: bob's runs had processes of their own, which alice's run had not poisoned...
      expect(same.process).not.to.equal(first.seen.process);
      expect(same.marker).to.equal(null);
      expect(other.process).not.to.be.oneOf([first.seen.process, same.process]);
      expect(other.marker).to.equal(null);
      // ...alice's process served her again, and its wrapper saw her connection, never bob's.
      expect(again.process).to.equal(first.seen.process);
      expect(again.marker).to.equal('poisoned');
      expect(again.seen).to.include(ALICE_SECRET);
      expect(again.seen).not.to.include(BOB_SECRET);

      // When alice takes bob's access back, her operator's processes (hers and bob's) end; her next run starts afresh.
      expect((await access('remove')).status).to.equal(200);
      const afterRevocation = (await run(alice, { item_type: 'task', item_laui: first.laui })).seen;
      expect(afterRevocation.process).not.to.equal(first.seen.process);
      expect(afterRevocation.marker).to.equal(null);
    });
  }
});
