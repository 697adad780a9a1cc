import { expect } from 'chai';
import { join } from 'node:path';
import { readSessionLog } from '../../ops/logging/sessionLogFile.ts';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser, type CatalogClient } from '../support/catalogFixture.ts';
import type { Reply } from '../support/HttpClient.ts';

const PY_VALUE = `
def run(connection, action_variables, context):
    return {
        "sum": action_variables["a"] + action_variables["b"],
        "action": context["action_name"],
        "session_id": context["session_id"],
        "user_laui": context["user_laui"],
    }
`;

const PY_ECHO = `
def run(connection, action_variables, context):
    print("echo ran")
    return {"connection": connection, "variables": action_variables}
`;

const PY_THROWS = `
def run(connection, action_variables, context):
    raise ValueError("boom from action")
`;

const PY_SLOW = `
import time
def run(connection, action_variables, context):
    time.sleep(30)
`;

const JS_NON_JSON = `
export function run() { return { tags: new Set([1, 2]) }; }
`;

const JS_NEW = `
module.exports = {
  run(connection, actionVariables, context) {
    return { greeting: 'hello ' + actionVariables.who, name: context.action_name, laui: context.action_laui };
  },
};
`;

const detailOf = (reply: Reply) => (reply.json as { detail: unknown }).detail;

describe('POST /api/v1/action/run (HTTP, embedded service, real action processes)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let admin: CatalogClient;
  let tree: Awaited<ReturnType<CatalogClient['bootstrap']>>;
  let connection: string;
  let sum: string;
  let echo: string;
  // Spec 2.2's key mappings let actions live under a workflow folder only (folder.action allows nothing).
  let actionsFolder: string;

  const run = (body: Record<string, unknown>, token = admin.token) => svc.client().post('/api/v1/action/run', { json: body, token });
  const action = (name: string, language: string, code: string, extra: Record<string, unknown> = {}) =>
    admin.createOk({ item_type: 'action', name: `${name}.action`, parent_laui: actionsFolder, project_laui: tree.project_laui, account_laui: tree.account_laui, codeblock: { language, code }, ...extra });
  const newAction = (name: string, extra: Record<string, unknown> = {}) => ({
    item_type: 'action',
    name,
    parent_laui: actionsFolder,
    project_laui: tree.project_laui,
    account_laui: tree.account_laui,
    codeblock: { language: 'javascript', content: JS_NEW },
    bashblock: { content: '' },
    ...extra,
  });
  const actionsNamed = async (name: string) =>
    ((await admin.search({ item_filter: { item_type: 'action', name, parent_laui: actionsFolder } })).json as { items: Array<Record<string, unknown>> }).items;

  before(async () => {
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
    tree = await admin.bootstrap('actions-co');
    actionsFolder = await admin.createOk({ item_type: 'folder.workflow', name: 'actions', parent_laui: tree.folders.workflow });
    connection = await admin.createOk({
      item_type: 'connection.postgresql',
      name: 'warehouse',
      parent_laui: tree.folders.connection,
      content: { host: 'db.example', password: 's3cret' },
    });
    sum = await action('sum', 'python', PY_VALUE);
    echo = await action('echo', 'python', PY_ECHO);
  });
  after(async () => svc.stop());

  it('given an existing Python action, when run, then 200 {result} is what run returned, with its context', async () => {
    const reply = await run({ item_type: 'action', item_laui: sum, action_variables: { a: 2, b: 3 } });
    expect(reply.status, reply.text).to.equal(200);
    const result = (reply.json as { result: Record<string, unknown> }).result;
    expect(Object.keys(reply.json as object)).to.deep.equal(['result']);
    expect(result).to.include({ sum: 5, action: 'sum.action' });
    expect(result.user_laui).to.match(/^[0-9a-f]{24}$/);
    expect(result.session_id).to.equal(reply.headers.get('x-session-id'));
    expect(reply.headers.get('x-item-laui')).to.equal(sum);
  });

  it('given a run, when it ends, then its printed line and its end line (TASK, step action) are written under its session_id', async () => {
    const reply = await run({ item_type: 'action', item_laui: echo });
    expect(reply.status, reply.text).to.equal(200);
    const sessionId = reply.headers.get('x-session-id') ?? '';
    await svc.service.logger.flush();
    const lines = readSessionLog(join(svc.dataDir, 'logs'), sessionId);
    expect(lines).to.have.length(2);
    expect(lines[0]).to.include({ category: 'TASK', step: 'action', session_id: sessionId, action_laui: echo, level: 'info', stream: 'stdout', message: 'echo ran' });
    expect(lines[1]).to.include({ category: 'TASK', step: 'action', session_id: sessionId, action_laui: echo, level: 'info', status: 'success', session_end: true });
    // The output is in its own lines: the end line does not repeat it.
    expect(lines[1]).not.to.have.property('logs');
  });

  it('given a new JavaScript action (codeblock with content and language), when run, then it is created through the catalog and run', async () => {
    const reply = await run(newAction('greeter.action', { action_variables: { who: 'world' }, description: 'made by action/run' }));
    expect(reply.status, reply.text).to.equal(200);
    const created = await actionsNamed('greeter.action');
    expect(created).to.have.length(1);
    const laui = created[0]?.laui;
    expect((reply.json as { result: unknown }).result).to.deep.equal({ greeting: 'hello world', name: 'greeter.action', laui });
    const stored = (await admin.get({ item_laui: String(laui) })).json as Record<string, unknown>;
    expect(stored).to.include({ item_type: 'action', project_laui: tree.project_laui, account_laui: tree.account_laui, description: 'made by action/run', version: 1 });
    expect(stored.codeblock).to.deep.equal({ language: 'javascript', content: JS_NEW });
    expect(stored.action_variables).to.deep.equal({ who: 'world' });
  });

  it('given a new action whose name is taken under its parent, when run, then 409 and nothing runs', async () => {
    const reply = await run(newAction('sum.action'));
    expect(reply.status, reply.text).to.equal(409);
    expect(detailOf(reply)).to.equal('Item already exists with the same unique key');
  });

  it('given templated action_variables, when run, then {{ds}} and request fields resolve and unknown ones stay', async () => {
    const reply = await run({ item_type: 'action', item_laui: echo, region: 'eu-1', action_variables: { day: '{{ds}}', where: '{{ region }}', n: 1, keep: '{{nope}}' } });
    expect(reply.status, reply.text).to.equal(200);
    const today = new Date().toISOString().slice(0, 10);
    expect((reply.json as { result: { variables: unknown } }).result.variables).to.deep.equal({ day: today, where: 'eu-1', n: 1, keep: '{{nope}}' });
  });

  it('given a connection_laui, when run, then the action receives the decrypted content (the catalog still masks it)', async () => {
    const reply = await run({ item_type: 'action', item_laui: echo, connection_laui: connection });
    expect(reply.status, reply.text).to.equal(200);
    expect((reply.json as { result: { connection: unknown } }).result.connection).to.deep.equal({ host: 'db.example', password: 's3cret' });
    expect(((await admin.get({ item_laui: connection })).json as { content: unknown }).content).to.deep.equal({ host: 'db.example', password: '********' });
    const without = await run({ item_type: 'action', item_laui: echo });
    expect((without.json as { result: { connection: unknown } }).result.connection).to.equal(null);
  });

  it('given an action storing its own connection_laui, when run without one, then that connection is used', async () => {
    const own = await action('own-conn', 'python', PY_ECHO, { connection_laui: connection });
    const reply = await run({ item_type: 'action', item_laui: own });
    expect(reply.status, reply.text).to.equal(200);
    expect((reply.json as { result: { connection: unknown } }).result.connection).to.deep.equal({ host: 'db.example', password: 's3cret' });
  });

  it('given an unknown or non-connection connection_laui, when run, then 422 naming it', async () => {
    for (const laui of ['65a0000000000000000000cc', sum]) {
      const reply = await run({ item_type: 'action', item_laui: echo, connection_laui: laui });
      expect(reply.status, reply.text).to.equal(422);
      expect(detailOf(reply)).to.equal(`connection item not found: ${laui}`);
    }
  });

  it('given an item_type other than action (or none), when run, then 422 with the exact string', async () => {
    for (const body of [{ item_type: 'task', item_laui: sum }, { item_laui: sum }, { ...newAction('x.action'), item_type: 'operator' }]) {
      const reply = await run(body);
      expect(reply.status, reply.text).to.equal(422);
      expect(reply.json).to.deep.equal({ detail: "Request item_type must be 'action'" });
    }
    expect(await actionsNamed('x.action')).to.have.length(0);
  });

  it('given an existing item that is not an action, when run, then 422 Only Action can be executed', async () => {
    const reply = await run({ item_type: 'action', item_laui: connection });
    expect(reply.status, reply.text).to.equal(422);
    expect(reply.json).to.deep.equal({ detail: 'Only Action can be executed' });
  });

  it('given an unknown or deleted item_laui, when run, then 404 Item not found', async () => {
    const gone = await action('gone', 'python', PY_VALUE);
    expect((await admin.post('/delete', { item_laui: gone })).status).to.equal(200);
    for (const laui of ['65a0000000000000000000ab', gone]) {
      const reply = await run({ item_type: 'action', item_laui: laui });
      expect(reply.status, reply.text).to.equal(404);
      expect(reply.json).to.deep.equal({ detail: 'Item not found' });
    }
  });

  it('given a new action missing required fields, when run, then 422 {summary, validation_context} with the catalog entries and nothing is created', async () => {
    const reply = await run({ item_type: 'action', name: 'incomplete.action', parent_laui: actionsFolder });
    expect(reply.status, reply.text).to.equal(422);
    const detail = detailOf(reply) as { summary: string; validation_context: { item_type: string; errors: Array<Record<string, unknown>> } };
    expect(detail.summary).to.be.a('string').and.include('project_laui: Field required');
    expect(detail.validation_context.item_type).to.equal('action');
    const missing = detail.validation_context.errors.map((entry) => [entry.type, (entry.loc as string[]).join('.')]);
    expect(missing).to.deep.equal([
      ['missing', 'body.project_laui'],
      ['missing', 'body.account_laui'],
      ['missing', 'body.codeblock'],
      ['missing', 'body.bashblock'],
    ]);
    expect(detail.validation_context.errors[0]?.expected_format).to.deep.equal({ name: 'project_laui', datatype: 'ObjectId', required: true, regex: '^[0-9a-f]{24}$' });
    expect(await actionsNamed('incomplete.action')).to.have.length(0);
  });

  it('given a new action with a bad name, a bad ObjectId and an unrunnable codeblock, when run, then each is an entry', async () => {
    const reply = await run(newAction('not-an-action', { project_laui: 'nope', codeblock: { language: 'ruby', content: 'puts 1' } }));
    expect(reply.status, reply.text).to.equal(422);
    const errors = (detailOf(reply) as { validation_context: { errors: Array<Record<string, unknown>> } }).validation_context.errors;
    expect(errors.map((entry) => [entry.type, (entry.loc as string[]).join('.')])).to.have.deep.members([
      ['string_pattern_mismatch', 'body.name'],
      ['value_error', 'body.project_laui'],
      ['value_error', 'body.codeblock'],
    ]);
  });

  it('given an action with only a bashblock (stored, or new with an empty codeblock), when run, then 422 saying a bashblock alone cannot run, and nothing is created', async () => {
    const stored = await admin.createOk({
      item_type: 'action',
      name: 'bash-only.action',
      parent_laui: actionsFolder,
      project_laui: tree.project_laui,
      account_laui: tree.account_laui,
      codeblock: { language: 'python', code: '' },
      bashblock: { code: 'echo only bash' },
    });
    const existing = await run({ item_type: 'action', item_laui: stored });
    expect(existing.status, existing.text).to.equal(422);
    expect(detailOf(existing)).to.be.a('string').and.include('bashblock alone cannot be run');
    const fresh = await run(newAction('bash-new.action', { codeblock: { language: 'python', content: '  ' }, bashblock: { content: 'echo hi' } }));
    expect(fresh.status, fresh.text).to.equal(422);
    const errors = (detailOf(fresh) as { validation_context: { errors: Array<{ loc: string[]; msg: string }> } }).validation_context.errors;
    expect(errors.map((entry) => [entry.loc.join('.'), entry.msg.includes('bashblock alone cannot be run')])).to.deep.equal([['body.codeblock', true]]);
    expect(await actionsNamed('bash-new.action')).to.have.length(0);
  });

  it('given an action that throws, when run, then 500 Internal server error with its message', async () => {
    const reply = await run({ item_type: 'action', item_laui: await action('throws', 'python', PY_THROWS) });
    expect(reply.status, reply.text).to.equal(500);
    expect(reply.json).to.deep.equal({ detail: 'Internal server error: ValueError: boom from action' });
  });

  it('given an action returning a value that is not JSON, when run, then 500 saying so (and the service keeps serving)', async () => {
    const reply = await run({ item_type: 'action', item_laui: await action('nonjson', 'javascript', JS_NON_JSON) });
    expect(reply.status, reply.text).to.equal(500);
    expect(detailOf(reply)).to.match(/^Internal server error: result of run contains .*Set.* which is not JSON-serialisable$/);
    expect((await run({ item_type: 'action', item_laui: sum, action_variables: { a: 1, b: 1 } })).status).to.equal(200);
  });

  it('given a user without EDIT on the action (or without VIEW on the connection), when run, then 403', async () => {
    const stranger = await createUser(svc, admin.token, 'stranger');
    const reply = await run({ item_type: 'action', item_laui: sum, action_variables: { a: 1, b: 1 } }, stranger.token);
    expect(reply.status, reply.text).to.equal(403);
    expect(reply.json).to.deep.equal({ detail: 'Access denied' });
    // Their own action may not borrow a connection they cannot see.
    const mine = catalogClient(svc, stranger.token);
    const own = await mine.bootstrap('stranger-co');
    const ownFolder = await mine.createOk({ item_type: 'folder.workflow', name: 'mine', parent_laui: own.folders.workflow });
    const theirs = await mine.createOk({
      item_type: 'action',
      name: 'peek.action',
      parent_laui: ownFolder,
      project_laui: own.project_laui,
      account_laui: own.account_laui,
      codeblock: { language: 'python', code: PY_ECHO },
    });
    const borrowed = await run({ item_type: 'action', item_laui: theirs, connection_laui: connection }, stranger.token);
    expect(borrowed.status, borrowed.text).to.equal(403);
  });

  it('given action_timeout_seconds 1 (system config), when an action hangs, then 500 naming the timeout', async () => {
    const slow = await action('slow', 'python', PY_SLOW);
    const config = await admin.createOk({ item_type: 'config', name: 'system', parent_laui: tree.folders.config, config_type: 'system', content: { action_timeout_seconds: 1 } });
    try {
      // The answer names the 1 s limit: the action's own sleep (far longer) did not end it.
      const reply = await run({ item_type: 'action', item_laui: slow });
      expect(reply.status, reply.text).to.equal(500);
      expect(reply.json).to.deep.equal({ detail: 'Internal server error: action timed out after 1 s' });
    } finally {
      await admin.post('/delete', { item_laui: config, hard_delete: true });
    }
  });
});
