import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { metadataFor, type EventToAppend } from '../../shared/events.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import type { LogEntry, Logger } from '../../shared/ports/Logger.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { UserDoc } from '../../shared/read-models/UserDoc.ts';
import { DEFAULT_SYSTEM_SETTINGS } from '../../shared/task/systemSettings.ts';
import { loadSystemSettings, type SystemSettingsSources } from '../../shared/task/loadSystemSettings.ts';
import { ITEMS, itemsProjection } from '../../projections/catalog/itemsProjection.ts';
import { USERS, usersProjection } from '../../projections/users/usersProjection.ts';
import { createAccessControl } from '../../projections/catalog/accessControl.ts';
import { itemCreatedEvent } from '../../command-side/catalog/itemCreatedEvent.ts';
import { itemStream } from '../../command-side/catalog/item.ts';
import { startTestService, type TestService } from '../support/testService.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { catalogClient, createUser, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';

/** Done three seconds after it was loaded: a run of it lasts longer than a 1 s completion timeout, however loaded the machine. */
const JS_THREE_SECONDS = `
const loaded = Date.now();
export function run() { return null; }
export function check_completion() { return Date.now() - loaded >= 3000 ? { status: 'success', waited: true } : { status: 'running' }; }
`;

class CapturingLogger implements Logger {
  readonly entries: LogEntry[] = [];
  log(entry: LogEntry): void {
    this.entries.push(entry);
  }
  async flush(): Promise<void> {}
}

type Task = Record<string, unknown> & { state: string };

/**
 * Only administrators' system configs are settings (docs/decisions.md). Configs a plain user made
 * before that rule are old data, written here straight into the log as the API once wrote them.
 */
describe('system settings: only administrators\' system configs apply', function () {
  this.timeout(90_000);
  let svc: TestService;
  let admin: CatalogClient;
  let mallory: { laui: Laui; token: string };
  let hers: Awaited<ReturnType<CatalogClient['bootstrap']>>;
  let bed: TaskBed;
  let sources: Omit<SystemSettingsSources, 'logger'>;
  /** Mallory's old system config: every task would end `timeout` after 1 s. */
  let hersOld: Laui;

  /** Appends events to an item's stream as an old log holds them and waits until the read models have them. */
  const appendOld = async (laui: Laui, events: EventToAppend[], expected: 'no_stream' | 'any') => {
    const { position } = await svc.service.eventStore.append(itemStream(laui), events, expected);
    expect(await svc.service.readModels.waitFor(position, 20_000)).to.equal(true);
  };
  /** TASK log lines of the service that name the item at step `settings`. */
  const settingsWarnings = async (laui: Laui): Promise<Array<Record<string, unknown>>> => {
    await svc.service.logger.flush();
    const dir = join(svc.config.logDir, 'TASK');
    const files = existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith('.jsonl')) : [];
    return files
      .flatMap((name) => readFileSync(join(dir, name), 'utf8').split('\n'))
      .filter((line) => line.includes(laui))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.step === 'settings');
  };
  const runNew = async (name: string, operatorLaui: string): Promise<Laui> => {
    const reply = await svc.client().post('/api/v1/task/run', { json: { item_type: 'task', ...bed.taskBody(name, operatorLaui) }, token: admin.token });
    expect(reply.status, reply.text).to.equal(200);
    return (reply.json as { item_laui: string }).item_laui;
  };
  const endOf = (laui: Laui) => waitForItem<Task>(admin, laui, (task) => ['success', 'timeout', 'error', 'fail'].includes(task.state), 60_000);

  before(async () => {
    svc = await startTestService({ WORKER_POOL_SIZE: '1' });
    admin = catalogClient(svc, (await svc.login()).token);
    mallory = await createUser(svc, admin.token, 'mallory');
    hers = await catalogClient(svc, mallory.token).bootstrap('mallory-co');
    bed = await taskBed(admin, 'victim-co', { name: 'c', content: {}, max_parallelism: 2 });
    const items = svc.service.readStore.collection<ItemDoc>(ITEMS, itemsProjection.indexes);
    sources = { items, access: createAccessControl({ items, groupsOf: async () => new Set(), users: svc.service.readStore.collection<UserDoc>(USERS, usersProjection.indexes) }) };

    hersOld = newLaui(new Date());
    await appendOld(hersOld, [
      itemCreatedEvent({
        laui: hersOld,
        itemType: 'config',
        name: 'mallory-settings',
        parent: { laui: hers.folders.config, type: 'folder.config' },
        fields: { config_type: 'system', content: { check_completion_timeout_seconds: 1, action_timeout_seconds: 7 } },
        access: { owners: { [mallory.laui]: 'true' }, editors: {}, viewers: {} },
        metadata: metadataFor(mallory.laui, new Date(), 'old-log'),
      }),
    ], 'no_stream');
  });
  after(async () => svc?.stop());

  it("given a plain user's old system config and an administrator's, when settings are loaded twice, then only the administrator's applies and one warning names hers", async () => {
    const adminConfig = await admin.createOk({ item_type: 'config', name: 'admin-settings', parent_laui: bed.tree.folders.config, config_type: 'system', content: { action_timeout_seconds: 42 } });
    try {
      const logger = new CapturingLogger();
      for (let load = 0; load < 2; load += 1) {
        const settings = await loadSystemSettings({ ...sources, logger });
        expect(settings.action_timeout_seconds).to.equal(42);
        expect(settings.check_completion_timeout_seconds).to.equal(DEFAULT_SYSTEM_SETTINGS.check_completion_timeout_seconds);
      }
      expect(logger.entries).to.have.length(1);
      expect(logger.entries[0]).to.include({ level: 'warning', category: 'TASK', step: 'settings', item_laui: hersOld });
      expect(logger.entries[0]?.message).to.include('mallory-settings').and.include(mallory.laui);
    } finally {
      expect((await admin.post('/delete', { item_laui: adminConfig, hard_delete: true })).status).to.equal(200);
    }
  });

  it('given an administrator\'s old system config last changed by a plain user (an editor before the rule), when loaded, then it is ignored and reported', async () => {
    const laui = await admin.createOk({ item_type: 'config', name: 'edited-settings', parent_laui: bed.tree.folders.config, config_type: 'system', content: { action_timeout_seconds: 42 } });
    try {
      await appendOld(laui, [
        {
          type: 'ItemUpdated',
          data: { changes: { content: { action_timeout_seconds: 5 } }, version: 2, revision_laui: newLaui(new Date()) },
          metadata: metadataFor(mallory.laui, new Date(), 'old-log'),
        },
      ], 'any');
      const logger = new CapturingLogger();
      expect((await loadSystemSettings({ ...sources, logger })).action_timeout_seconds).to.equal(DEFAULT_SYSTEM_SETTINGS.action_timeout_seconds);
      expect(logger.entries.map((entry) => entry.item_laui)).to.include(laui);
      // An administrator saving it again vouches for it: it applies.
      expect((await admin.post('/update', { item_laui: laui, content: { action_timeout_seconds: 43 } })).status).to.equal(200);
      expect((await loadSystemSettings(sources)).action_timeout_seconds).to.equal(43);
    } finally {
      expect((await admin.post('/delete', { item_laui: laui, hard_delete: true })).status).to.equal(200);
    }
  });

  it("given a plain user's old system config with check_completion_timeout_seconds 1, when another user's task runs longer, then it succeeds and the service warned once", async () => {
    const operator = await admin.createOk({ item_type: 'operator', name: 'three-seconds.operator', parent_laui: bed.tree.folders.operator, codeblock: { language: 'javascript', code: JS_THREE_SECONDS } });
    const first = await endOf(await runNew('victim-1', operator));
    expect(first).to.deep.include({ state: 'success', last_run_output: { status: 'success', waited: true } });
    expect((await endOf(await runNew('victim-2', operator))).state).to.equal('success');
    // Each run loaded the settings (create-and-run, the worker): one line for the item all the same.
    expect(await settingsWarnings(hersOld)).to.have.length(1);
  });

  it('given the same setting in an administrator\'s system config, when such a task runs, then it ends timeout (the setting is live in this service)', async () => {
    const operator = await admin.createOk({ item_type: 'operator', name: 'three-seconds-2.operator', parent_laui: bed.tree.folders.operator, codeblock: { language: 'javascript', code: JS_THREE_SECONDS } });
    const config = await admin.createOk({ item_type: 'config', name: 'admin-timeouts', parent_laui: bed.tree.folders.config, config_type: 'system', content: { check_completion_timeout_seconds: 1 } });
    try {
      expect((await endOf(await runNew('victim-3', operator))).state).to.equal('timeout');
    } finally {
      expect((await admin.post('/delete', { item_laui: config, hard_delete: true })).status).to.equal(200);
    }
  });
});
