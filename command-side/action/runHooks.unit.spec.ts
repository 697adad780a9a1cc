import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { fixedClock } from '../../shared/clock.ts';
import { metadataFor } from '../../shared/events.ts';
import { newLaui } from '../../shared/ids.ts';
import type { ActionOutcome, ActionRunRequest, CodeRunner } from '../../shared/ports/CodeRunner.ts';
import type { LogEntry, Logger } from '../../shared/ports/Logger.ts';
import { sealSecretFields } from '../../shared/item-types/secretFields.ts';
import { ITEMS, itemsProjection } from '../../projections/catalog/itemsProjection.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { MemoryReadStore } from '../../projections/read-store/MemoryReadStore.ts';
import { AesSecretBox } from '../../ops/keys/AesSecretBox.ts';
import { createAccessControl } from '../../projections/catalog/accessControl.ts';
import type { ActionRunDeps } from './executeAction.ts';
import { actionsStatusAfter, runHookList, type ActionStatusEntry, type HookKind } from './runHooks.ts';

/**
 * A runner that does what the action's code says instead of running it:
 * `return <json>`, `throw <message>`, `timeout`, `invalid <message>`; `echo` returns what it was given.
 */
class ScriptedRunner implements CodeRunner {
  readonly requests: ActionRunRequest[] = [];
  async runOperator(): Promise<never> {
    throw new Error('not used');
  }
  async runAction(request: ActionRunRequest): Promise<ActionOutcome> {
    this.requests.push(request);
    const code = request.codeblock?.code ?? '';
    const log = { logs: '', logsTruncated: false };
    if (code === 'echo') return { ok: true, result: { connection: request.connection, variables: request.actionVariables, context: request.context }, ...log };
    if (code.startsWith('return ')) return { ok: true, result: JSON.parse(code.slice('return '.length)) as unknown, ...log };
    if (code.startsWith('throw ')) return { ok: false, kind: 'error', message: code.slice('throw '.length), ...log };
    if (code === 'timeout') return { ok: false, kind: 'timeout', message: 'time limit exceeded', ...log };
    return { ok: false, kind: 'invalid', message: `invalid code: ${code}`, ...log };
  }
  reuseScopes(): [] {
    return [];
  }
  async retire(): Promise<void> {}
  async close(): Promise<void> {}
  ran(): string[] {
    return this.requests.map((request) => String(request.context.action_name));
  }
}

class MemoryLogger implements Logger {
  readonly entries: LogEntry[] = [];
  log(entry: LogEntry): void {
    this.entries.push(entry);
  }
  async flush(): Promise<void> {}
}

const NOW = new Date('2026-03-04T05:06:07.000Z');

describe('task hooks: runHookList (spec 2.5, rule 7) with a scripted runner', () => {
  let deps: ActionRunDeps;
  let runner: ScriptedRunner;
  let logger: MemoryLogger;
  let secrets: AesSecretBox;
  const USER = '65a000000000000000000001';
  /** The only administrator: system settings count only when an administrator owns them. */
  const ADMIN = '65a000000000000000000002';
  const metadata = metadataFor(USER, NOW, 'corr-1');

  const put = async (fields: Partial<ItemDoc> & { item_type: string; name: string }): Promise<string> => {
    const laui = newLaui(NOW);
    await deps.items.put({
      id: laui,
      laui,
      parent_laui: null,
      is_root: false,
      // The hooks run on behalf of USER: it may VIEW what the specs put, unless a spec says otherwise.
      access: { owners: {}, editors: {}, viewers: { [USER]: 'true' } },
      created_at: NOW.toISOString(),
      updated_at: NOW.toISOString(),
      deleted_at: null,
      is_deleted: false,
      created_by: null,
      updated_by: null,
      version: 1,
      pk: fields.name,
      created_seq: 0,
      ...fields,
    } as ItemDoc);
    return laui;
  };
  const action = (name: string, code: string, extra: Record<string, unknown> = {}) =>
    put({ item_type: 'action', name: `${name}.action`, codeblock: { language: 'python', code }, ...extra });
  const taskWith = (kind: HookKind, references: Array<Record<string, unknown>>, extra: Record<string, unknown> = {}) => ({
    laui: '65a0000000000000000000f1',
    name: 'nightly',
    logical_date: '2026-01-02T00:00:00.000Z',
    region: 'task-region',
    actions: { create_actions: [], pre_actions: [], running_actions: [], post_actions: [], [kind]: references },
    ...extra,
  });

  beforeEach(() => {
    runner = new ScriptedRunner();
    logger = new MemoryLogger();
    secrets = new AesSecretBox(randomBytes(32));
    const items = new MemoryReadStore().collection<ItemDoc>(ITEMS, itemsProjection.indexes);
    deps = {
      items,
      access: createAccessControl({
        items,
        groupsOf: async () => new Set(),
        users: { peek: async (laui) => ([USER, ADMIN].includes(laui) ? { laui, username: laui, is_admin: laui === ADMIN, must_change_password: false } : null) },
      }),
      secrets,
      runner,
      logger,
      clock: fixedClock(NOW),
      limits: { memoryMb: 128, maxOutputBytes: 4096 },
    };
  });

  it('given pre-actions where the second returns false, when run, then the third is not run and allPassed is false with the failed entry', async () => {
    const first = await action('first', 'return {"ok": 1}');
    const second = await action('second', 'return false');
    const third = await action('third', 'return true');
    const outcome = await runHookList(deps, taskWith('pre_actions', [{ laui: first }, { laui: second }, { laui: third }]), 'pre_actions', metadata, {});
    expect(outcome.allPassed).to.equal(false);
    expect(runner.ran()).to.deep.equal(['first.action', 'second.action']);
    expect(outcome.statuses.map((entry) => [entry.name, entry.state, entry.result])).to.deep.equal([
      ['first.action', 'success', { ok: 1 }],
      ['second.action', 'failed', false],
    ]);
    expect(outcome.statuses[1]).to.include({ laui: second, action_type: 'pre_actions', started_at: NOW.toISOString(), ended_at: NOW.toISOString() });
    expect(outcome.statuses[1]?.session_id).to.match(/^[0-9a-f]{24}$/);
  });

  it('given values other than false (null, 0, "", {}), when run as pre-actions, then all pass', async () => {
    const refs = [];
    for (const [index, value] of ['null', '0', '""', '{}'].entries()) refs.push({ laui: await action(`v${index}`, `return ${value}`) });
    const outcome = await runHookList(deps, taskWith('pre_actions', refs), 'pre_actions', metadata, {});
    expect(outcome.allPassed).to.equal(true);
    expect(outcome.statuses.map((entry) => entry.state)).to.deep.equal(['success', 'success', 'success', 'success']);
  });

  it('given post actions where the first throws, when run, then the others still run and the failure is an error entry', async () => {
    const boom = await action('boom', 'throw ValueError: boom');
    const later = await action('later', 'return "done"');
    const slow = await action('slow', 'timeout');
    const last = await action('last', 'return false');
    const outcome = await runHookList(deps, taskWith('post_actions', [{ laui: boom }, { laui: later }, { laui: slow }, { laui: last }]), 'post_actions', metadata, {});
    expect(runner.ran()).to.deep.equal(['boom.action', 'later.action', 'slow.action', 'last.action']);
    expect(outcome.allPassed).to.equal(false);
    expect(outcome.statuses.map((entry) => [entry.state, entry.error ?? null])).to.deep.equal([
      ['error', 'ValueError: boom'],
      ['success', null],
      ['timeout', 'action timed out after 300 s'],
      ['failed', null],
    ]);
  });

  it('given running actions, when one fails, then the others still run', async () => {
    const failing = await action('failing', 'throw nope');
    const fine = await action('fine', 'return 1');
    const outcome = await runHookList(deps, taskWith('running_actions', [{ laui: failing, sla: 5 }, { laui: fine, sla: 5 }]), 'running_actions', metadata, {});
    expect(runner.ran()).to.deep.equal(['failing.action', 'fine.action']);
    expect(runner.requests[0]?.context).to.include({ sla: 5, action_type: 'running_actions' });
    expect(outcome.allPassed).to.equal(false);
    expect(outcome.statuses.map((entry) => entry.state)).to.deep.equal(['error', 'success']);
  });

  it('given a missing, a deleted and a non-action reference, when run as post actions, then each is an error entry and nothing runs', async () => {
    const missing = '65a0000000000000000000ee';
    const deleted = await action('gone', 'return 1', { is_deleted: true, deleted_at: NOW.toISOString() });
    const folder = await put({ item_type: 'folder.action', name: 'actions' });
    const outcome = await runHookList(
      deps,
      taskWith('post_actions', [{ laui: missing, name: 'remembered.action' }, { laui: deleted }, { laui: folder }]),
      'post_actions',
      metadata,
      {},
    );
    expect(runner.requests).to.have.length(0);
    expect(outcome.allPassed).to.equal(false);
    expect(outcome.statuses.map((entry) => [entry.laui, entry.name, entry.state, entry.error])).to.deep.equal([
      [missing, 'remembered.action', 'error', `action item not found: ${missing}`],
      [deleted, deleted, 'error', `action item not found: ${deleted}`],
      [folder, folder, 'error', `action item not found: ${folder}`],
    ]);
    expect(logger.entries.filter((entry) => entry.step === 'action' && entry.level === 'error')).to.have.length(3);
  });

  it('given a missing pre-action first, when run, then it stops the list', async () => {
    const fine = await action('fine', 'return 1');
    const outcome = await runHookList(deps, taskWith('pre_actions', [{ laui: '65a0000000000000000000ee' }, { laui: fine }]), 'pre_actions', metadata, {});
    expect(outcome.statuses).to.have.length(1);
    expect(runner.requests).to.have.length(0);
  });

  it('given templated action_variables, when run, then task fields, parameters and builtins resolve (builtin > parameter > task field), undefined stays', async () => {
    const echo = await action('echo', 'echo', { action_variables: { ignored: 'the reference wins' } });
    const task = taskWith('pre_actions', [
      { laui: echo, action_variables: { day: '{{ ds }}', region: '{{region}}', task: '{{ name }}', nested: ['{{ds_nodash}}'], keep: '{{nope}}', n: 3 } },
    ]);
    await runHookList(deps, task, 'pre_actions', metadata, { region: 'param-region', ds: 'param-ds' });
    expect(runner.requests[0]?.actionVariables).to.deep.equal({ day: '2026-01-02', region: 'param-region', task: 'nightly', nested: ['20260102'], keep: '{{nope}}', n: 3 });
    expect(runner.requests[0]?.context).to.include({
      action_laui: echo,
      action_name: 'echo.action',
      action_type: 'pre_actions',
      user_laui: metadata.user_laui,
      task_laui: task.laui,
      task_name: 'nightly',
    });
  });

  it('given a reference without action_variables, when run, then the action item\'s own variables are used (templated)', async () => {
    const echo = await action('echo', 'echo', { action_variables: { day: '{{ds}}' } });
    await runHookList(deps, taskWith('post_actions', [{ laui: echo }]), 'post_actions', metadata, {});
    expect(runner.requests[0]?.actionVariables).to.deep.equal({ day: '2026-01-02' });
  });

  it('given reference timeouts below and above action_timeout_seconds, when run, then the limit is the larger one', async () => {
    await put({ item_type: 'config', name: 'system', config_type: 'system', content: { action_timeout_seconds: 20 }, access: { owners: { [ADMIN]: 'true' }, editors: {}, viewers: {} } });
    const echo = await action('echo', 'echo');
    await runHookList(deps, taskWith('post_actions', [{ laui: echo, timeout: 5 }, { laui: echo, timeout: 45 }, { laui: echo }]), 'post_actions', metadata, {});
    expect(runner.requests.map((request) => request.limits)).to.deep.equal([
      { memoryMb: 128, maxOutputBytes: 4096, timeoutMs: 20_000 },
      { memoryMb: 128, maxOutputBytes: 4096, timeoutMs: 45_000 },
      { memoryMb: 128, maxOutputBytes: 4096, timeoutMs: 20_000 },
    ]);
  });

  it('given a reference connection_laui (templated) with sealed content, when run, then the action gets the opened content; an unknown one is an error entry', async () => {
    const content = { host: 'db.example', password: 's3cret' };
    const connection = await put({ item_type: 'connection.postgresql', name: 'db', ...sealSecretFields('connection.postgresql', { content }, secrets) });
    const echo = await action('echo', 'echo');
    const outcome = await runHookList(
      deps,
      taskWith('post_actions', [{ laui: echo, connection_laui: '{{ target }}' }, { laui: echo, connection_laui: '65a0000000000000000000dd' }, { laui: echo }]),
      'post_actions',
      metadata,
      { target: connection },
    );
    expect(runner.requests).to.have.length(2);
    expect(runner.requests[0]?.connection).to.deep.equal(content);
    expect(runner.requests[1]?.connection).to.equal(null);
    expect(outcome.statuses[1]).to.include({ state: 'error', error: 'connection item not found: 65a0000000000000000000dd' });
  });

  it('given an action or a (templated) connection its user cannot VIEW, when run, then the hook is an access-denied error entry and nothing runs (issue 19)', async () => {
    const hidden = { owners: {}, editors: {}, viewers: {} };
    const content = { host: 'db.example', password: 's3cret' };
    const connection = await put({ item_type: 'connection.postgresql', name: 'db', access: hidden, ...sealSecretFields('connection.postgresql', { content }, secrets) });
    const echo = await action('echo', 'echo');
    const secretAction = await action('hidden', 'echo', { access: hidden, connection_laui: null });
    const outcome = await runHookList(
      deps,
      taskWith('post_actions', [{ laui: echo, connection_laui: '{{ target }}' }, { laui: secretAction }, { laui: echo }]),
      'post_actions',
      metadata,
      { target: connection },
    );
    expect(runner.requests.map((request) => request.connection)).to.deep.equal([null]);
    expect(outcome.statuses.map((entry) => entry.state)).to.deep.equal(['error', 'error', 'success']);
    expect(outcome.statuses[0]?.error).to.equal(`Access denied: user ${USER} cannot VIEW ${connection}`);
    expect(outcome.statuses[1]?.error).to.equal(`Access denied: user ${USER} cannot VIEW ${secretAction}`);
  });

  it('given no references, when run, then it passes without loading anything', async () => {
    expect(await runHookList(deps, { name: 't' }, 'create_actions', metadata)).to.deep.equal({ allPassed: true, statuses: [] });
  });

  it('given each run, when it ends, then one TASK log line with step action and its session_id is written', async () => {
    const fine = await action('fine', 'return 1');
    const outcome = await runHookList(deps, taskWith('pre_actions', [{ laui: fine }]), 'pre_actions', metadata, {});
    const lines = logger.entries.filter((entry) => entry.step === 'action');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ category: 'TASK', session_id: outcome.statuses[0]?.session_id, action_type: 'pre_actions', task_name: 'nightly', status: 'success' });
  });
});

describe('task hooks: actionsStatusAfter', () => {
  const entry = (name: string, kind: HookKind): ActionStatusEntry => ({
    laui: '65a0000000000000000000aa',
    name,
    action_type: kind,
    state: 'success',
    started_at: NOW.toISOString(),
    ended_at: NOW.toISOString(),
    session_id: 's',
  });

  it('given the spec default, when post statuses are recorded, then the four lists are present and only post_actions changes', () => {
    const previous = { pre_actions: [entry('p', 'pre_actions')], running_actions: [], post_actions: [entry('old', 'post_actions')], note: 'kept' };
    const next = actionsStatusAfter(previous, 'post_actions', [entry('new', 'post_actions')]);
    expect(next).to.deep.equal({
      create_actions: [],
      pre_actions: [entry('p', 'pre_actions')],
      running_actions: [],
      post_actions: [entry('new', 'post_actions')],
      note: 'kept',
    });
    expect(previous.post_actions[0]?.name).to.equal('old');
  });

  it('given no previous status (null or garbage), when create statuses are recorded, then the shape is complete', () => {
    for (const previous of [null, undefined, 'x', []]) {
      expect(actionsStatusAfter(previous, 'create_actions', [entry('c', 'create_actions')])).to.deep.equal({
        create_actions: [entry('c', 'create_actions')],
        pre_actions: [],
        running_actions: [],
        post_actions: [],
      });
    }
  });
});
