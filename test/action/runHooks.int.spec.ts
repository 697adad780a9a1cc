import { expect } from 'chai';
import { systemClock } from '../../shared/clock.ts';
import { metadataFor } from '../../shared/events.ts';
import { ITEMS, itemsProjection } from '../../projections/catalog/itemsProjection.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { loadKeys } from '../../ops/keys/loadKeys.ts';
import { createAccessControl } from '../../projections/catalog/accessControl.ts';
import { USERS, usersProjection } from '../../projections/users/usersProjection.ts';
import type { UserDoc } from '../../shared/read-models/UserDoc.ts';
import { AesSecretBox } from '../../ops/keys/AesSecretBox.ts';
import { ProcessCodeRunner } from '../../ops/worker/ProcessCodeRunner.ts';
import type { ActionRunDeps } from '../../command-side/action/executeAction.ts';
import { runHookList } from '../../command-side/action/runHooks.ts';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, type CatalogClient } from '../support/catalogFixture.ts';

const PY_RETURNS = (value: string) => `
def run(connection, action_variables, context):
    return ${value}
`;

const JS_ECHO = `
export function run(connection, actionVariables, context) {
  return { host: connection && connection.host, password: connection && connection.password, variables: actionVariables, task: context.task_name };
}
`;

const PY_THROWS = `
def run(connection, action_variables, context):
    raise RuntimeError("post hook broke")
`;

/**
 * runHookList against the real service's catalog (items created over HTTP, connection content sealed
 * by the catalog) with real action processes: the service's items read model and deployment key.
 */
describe('task hooks: runHookList with the service catalog and real action processes', function () {
  this.timeout(60_000);
  let svc: TestService;
  let admin: CatalogClient;
  let folder: string;
  let tree: Awaited<ReturnType<CatalogClient['bootstrap']>>;
  let deps: ActionRunDeps;
  let runner: ProcessCodeRunner;
  // The hooks run on behalf of the administrator (who may VIEW everything).
  let adminLaui: string;
  const metadata = () => metadataFor(adminLaui, new Date(), 'hooks-spec');

  const action = (name: string, language: string, code: string) =>
    admin.createOk({ item_type: 'action', name: `${name}.action`, parent_laui: folder, project_laui: tree.project_laui, account_laui: tree.account_laui, codeblock: { language, code } });
  const task = (kind: string, references: Array<Record<string, unknown>>) => ({
    name: 'hooked-task',
    logical_date: '2026-01-02T00:00:00.000Z',
    actions: { create_actions: [], pre_actions: [], running_actions: [], post_actions: [], [kind]: references },
  });

  before(async () => {
    svc = await startTestService({ WORKER_POOL_SIZE: '0' });
    admin = catalogClient(svc, (await svc.login()).token);
    adminLaui = ((await svc.client().get('/api/v1/user/me', { token: admin.token })).json as { laui: string }).laui;
    tree = await admin.bootstrap('hooks-co');
    folder = await admin.createOk({ item_type: 'folder.workflow', name: 'wf', parent_laui: tree.folders.workflow });
    runner = new ProcessCodeRunner({ poolSize: 0 });
    const items = svc.service.readStore.collection<ItemDoc>(ITEMS, itemsProjection.indexes);
    deps = {
      items,
      access: createAccessControl({ items, groupsOf: async () => new Set(), users: svc.service.readStore.collection<UserDoc>(USERS, usersProjection.indexes) }),
      secrets: new AesSecretBox((await loadKeys(svc.config)).encryptionKey),
      runner,
      logger: svc.service.logger,
      clock: systemClock,
      limits: { memoryMb: 256, maxOutputBytes: 64 * 1024 },
    };
  });
  after(async () => {
    await runner.close();
    await svc.stop();
  });

  it('given pre-actions where the second returns False, when run, then the third is not run and allPassed is false', async () => {
    const first = await action('pre-ok', 'python', PY_RETURNS('{"checked": True}'));
    const second = await action('pre-false', 'python', PY_RETURNS('False'));
    const third = await action('pre-never', 'python', PY_RETURNS('True'));
    const outcome = await runHookList(deps, task('pre_actions', [{ laui: first }, { laui: second }, { laui: third }]), 'pre_actions', metadata(), {});
    expect(outcome.allPassed).to.equal(false);
    expect(outcome.statuses.map((entry) => [entry.laui, entry.name, entry.action_type, entry.state, entry.result])).to.deep.equal([
      [first, 'pre-ok.action', 'pre_actions', 'success', { checked: true }],
      [second, 'pre-false.action', 'pre_actions', 'failed', false],
    ]);
  });

  it('given post actions where one throws, when run, then the others still run (and see the decrypted connection and templated variables)', async () => {
    const connection = await admin.createOk({ item_type: 'connection', name: 'hook-conn', parent_laui: tree.folders.connection, content: { host: 'h.example', password: 'pw' } });
    const broken = await action('post-broken', 'python', PY_THROWS);
    const echo = await action('post-echo', 'javascript', JS_ECHO);
    const outcome = await runHookList(
      deps,
      task('post_actions', [{ laui: broken }, { laui: echo, connection_laui: connection, action_variables: { day: '{{ds}}', env: '{{env}}' } }]),
      'post_actions',
      metadata(),
      { env: 'prod' },
    );
    expect(outcome.allPassed).to.equal(false);
    expect(outcome.statuses.map((entry) => entry.state)).to.deep.equal(['error', 'success']);
    expect(outcome.statuses[0]?.error).to.equal('RuntimeError: post hook broke');
    expect(outcome.statuses[1]?.result).to.deep.equal({ host: 'h.example', password: 'pw', variables: { day: '2026-01-02', env: 'prod' }, task: 'hooked-task' });
  });

  it('given a reference to a missing action, when run, then an error entry names it and the list reports not passed', async () => {
    const fine = await action('post-fine', 'python', PY_RETURNS('1'));
    const missing = '65a0000000000000000000ee';
    const outcome = await runHookList(deps, task('post_actions', [{ laui: missing }, { laui: fine }]), 'post_actions', metadata(), {});
    expect(outcome.allPassed).to.equal(false);
    expect(outcome.statuses[0]).to.include({ laui: missing, state: 'error', error: `action item not found: ${missing}`, action_type: 'post_actions' });
    expect(outcome.statuses[1]).to.include({ laui: fine, state: 'success', result: 1 });
  });
});
