import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { catalogClient, waitForItem, type CatalogClient } from '../../test/support/catalogFixture.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';
import { taskBed } from '../../test/support/taskBed.ts';

const run = promisify(execFile);
const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** `npm run cli -- <args>` on `dataDir`, as an operator runs it (its own process). */
const cli = (dataDir: string, args: string[]) =>
  run(process.execPath, ['--import', 'tsx', join(REPO, 'ops', 'cli.ts'), ...args], { cwd: REPO, env: { ...process.env, DATA_DIR: dataDir }, maxBuffer: 16 * 1024 * 1024 });

const failure = async (promise: Promise<unknown>): Promise<string> => {
  try {
    await promise;
  } catch (error) {
    return String((error as { stderr?: string }).stderr ?? error);
  }
  return expect.fail('expected the command to fail');
};

/** The items as the catalog serves them (GET /catalog/get), by laui; a missing one is absent. */
const itemsOf = async (api: CatalogClient, lauis: ReadonlyArray<string>): Promise<Map<string, Record<string, unknown>>> => {
  const found = new Map<string, Record<string, unknown>>();
  for (const laui of lauis) {
    const reply = await api.get({ item_laui: laui });
    if (reply.status === 404) continue;
    expect(reply.status, reply.text).to.equal(200);
    found.set(laui, reply.json as Record<string, unknown>);
  }
  return found;
};

describe('backup and restore of DATA_DIR (npm run cli -- backup / restore)', function () {
  this.timeout(300_000);
  const base = mkdtempSync(join(tmpdir(), 'backup-spec-'));
  const backupFile = join(base, 'service.backup');
  let source: TestService;
  let admin: CatalogClient;
  let task = '';
  let sourceItems = new Map<string, Record<string, unknown>>();
  let fixtures: string[] = [];
  let acknowledgedBefore: string[] = [];
  let acknowledgedDuring: string[] = [];
  let acknowledgedAfter: string[] = [];

  before(async () => {
    source = await startTestService({});
    admin = catalogClient(source, (await source.login()).token);
    // A connection whose password is sealed with the service's key, and a task whose operator can
    // only answer right if the run opened it.
    const bed = await taskBed(admin, 'backup-co', { name: 'c', content: { host: 'db.example', password: 'restore-me-s3cret' }, max_parallelism: 2 });
    const operator = await admin.createOk({
      item_type: 'operator',
      name: 'reveal.operator',
      parent_laui: bed.tree.folders.operator,
      codeblock: { language: 'javascript', code: 'export function run(connection) { return { reversed: String(connection.password).split("").reverse().join("") }; }\n' },
    });
    task = await admin.createOk({ item_type: 'task', ...bed.taskBody('reveal', operator) });
    const { folders, project_laui: project } = await admin.bootstrap('load-co');
    fixtures = [bed.tree.account_laui, bed.tree.project_laui, bed.connection, bed.workflow, operator, task, project, folders.payload];

    // A write load of item creations, going on while the backup is taken.
    let writing = true;
    const acknowledged: string[] = [];
    let n = 0;
    const writer = async () => {
      while (writing) {
        const reply = await admin.create({ item_type: 'payload', name: `p-${n++}`, parent_laui: folders.payload, content: { n, text: 'x'.repeat(200) } });
        expect(reply.status, reply.text).to.equal(200);
        acknowledged.push((reply.json as { item_laui: string }).item_laui);
      }
    };
    const writers = [writer(), writer(), writer()];
    while (acknowledged.length < 150) await new Promise((resolve) => setTimeout(resolve, 20));
    acknowledgedBefore = [...acknowledged];
    const { stdout, stderr } = await cli(source.dataDir, ['backup', '--out', backupFile]);
    expect(stderr).to.match(/WARNING: .* holds the service's keys/);
    expect(JSON.parse(stdout)).to.include({ out: backupFile });
    // Still writing after the backup ended: those are not in it. Those acknowledged while it ran may be.
    const after = acknowledged.length;
    acknowledgedDuring = acknowledged.slice(acknowledgedBefore.length, after);
    while (acknowledged.length < after + 30) await new Promise((resolve) => setTimeout(resolve, 20));
    writing = false;
    await Promise.all(writers);
    // Requested after the backup ended: a write in flight when it ended may have made it in.
    acknowledgedAfter = acknowledged.slice(after + writers.length);
    sourceItems = await itemsOf(admin, [...fixtures, ...acknowledged]);
    await source.stop({ keepData: true });
  });

  after(() => {
    rmSync(base, { recursive: true, force: true });
    rmSync(source.dataDir, { recursive: true, force: true });
  });

  it('given a backup taken under a write load, when restored into an empty DATA_DIR and served, then every item is as the source served it, none acknowledged before the backup is missing, and the sealed secret opens', async () => {
    expect(statSync(backupFile).mode & 0o777, 'the backup holds the keys: 0600').to.equal(0o600);
    const restoredDir = join(base, 'restored');
    const { stdout } = await cli(restoredDir, ['restore', '--from', backupFile]);
    const summary = JSON.parse(stdout) as { log_head_position: number };
    expect(summary.log_head_position).to.be.greaterThan(0);
    expect(statSync(restoredDir).mode & 0o777).to.equal(0o700);
    expect(statSync(join(restoredDir, 'keys', 'encryption.key')).mode & 0o777).to.equal(0o600);

    const restored = await startTestService({}, {}, restoredDir);
    try {
      const api = catalogClient(restored, (await restored.login()).token);
      const items = await itemsOf(api, [...sourceItems.keys()]);
      // Items are only created, never changed: each restored one is exactly as the source serves it.
      for (const [laui, item] of items) expect(item, laui).to.deep.equal(sourceItems.get(laui));
      for (const laui of [...fixtures, ...acknowledgedBefore]) expect(items.has(laui), `written before the backup: ${laui}`).to.equal(true);
      for (const laui of acknowledgedAfter) expect(items.has(laui), `written after the backup: ${laui}`).to.equal(false);
      // Those acknowledged while it ran: in the backup or not, as the moment of its copy decides.
      expect(acknowledgedDuring.filter((laui) => items.has(laui)).every((laui) => sourceItems.has(laui))).to.equal(true);

      const reply = await restored.client().post('/api/v1/task/run', { json: { item_laui: task }, token: api.token });
      expect(reply.status, reply.text).to.equal(200);
      const ended = await waitForItem<{ state: string; last_run_output: unknown }>(api, task, (item) => ['success', 'error', 'fail'].includes(item.state), 60_000);
      expect(ended.state, JSON.stringify(ended.last_run_output)).to.equal('success');
      expect(ended.last_run_output).to.deep.equal({ reversed: 'terc3s-em-erotser' });
    } finally {
      await restored.stop();
    }
  });

  it('given a DATA_DIR that is not empty, when restored into, then it is refused and left as it was', async () => {
    const busy = mkdtempSync(join(base, 'busy-'));
    writeFileSync(join(busy, 'events.sqlite'), 'a service lives here');
    expect(await failure(cli(busy, ['restore', '--from', backupFile]))).to.match(/is not empty/);
    expect(readFileSync(join(busy, 'events.sqlite'), 'utf8')).to.equal('a service lives here');
  });

  it('given a damaged backup file, when restored, then it is refused and nothing is written', async () => {
    const bytes = readFileSync(backupFile);
    const damaged = join(base, 'damaged.backup');
    const copy = Buffer.from(bytes);
    copy[Math.floor(copy.length / 2)] = (copy[Math.floor(copy.length / 2)] ?? 0) ^ 0xff;
    writeFileSync(damaged, copy);
    const target = join(base, 'from-damaged');
    expect(await failure(cli(target, ['restore', '--from', damaged]))).to.match(/damaged backup|not a backup/);
    expect(() => statSync(target)).to.throw(/ENOENT/);
  });

  it('given an existing backup file, when backed up again without --force, then it is refused', async () => {
    expect(await failure(cli(source.dataDir, ['backup', '--out', backupFile]))).to.match(/exists: give --force/);
  });
});
