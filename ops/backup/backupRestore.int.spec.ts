import Database from 'better-sqlite3';
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { catalogClient, waitForItem, type CatalogClient } from '../../test/support/catalogFixture.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';
import { taskBed } from '../../test/support/taskBed.ts';
import { waitUntil } from '../../test/support/waitUntil.ts';

const run = promisify(execFile);
const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** `npm run cli -- <args>` on `dataDir`, as an operator runs it (its own process). */
const cli = (dataDir: string, args: string[]) =>
  run(process.execPath, ['--import', 'tsx', join(REPO, 'ops', 'cli.ts'), ...args], { cwd: REPO, env: { ...process.env, DATA_DIR: dataDir }, maxBuffer: 16 * 1024 * 1024 });

const failure = async (promise: Promise<unknown>): Promise<{ code: unknown; stderr: string }> => {
  try {
    await promise;
  } catch (error) {
    return { code: (error as { code?: unknown }).code, stderr: String((error as { stderr?: string }).stderr ?? error) };
  }
  return expect.fail('expected the command to fail');
};

type View = Record<string, unknown>;

/** Every item and every link as POST /catalog/search serves them to an administrator, in creation order. */
const everything = async (api: CatalogClient, filter: 'item_filter' | 'link_filter'): Promise<View[]> => {
  const found: View[] = [];
  let token: string | undefined;
  do {
    const reply = await api.search({ [filter]: {}, pagination: { per_page: 1000, ...(token === undefined ? {} : { page_token: token }) } });
    expect(reply.status, reply.text).to.equal(200);
    const page = reply.json as { items: View[]; pagination: { next_page_token: string | null } };
    found.push(...page.items);
    token = page.pagination.next_page_token ?? undefined;
  } while (token !== undefined);
  return found;
};

/** GET /catalog/get of each item. */
const itemsByGet = async (api: CatalogClient, lauis: ReadonlyArray<string>): Promise<Map<string, View>> => {
  const found = new Map<string, View>();
  for (const laui of lauis) {
    const reply = await api.get({ item_laui: laui });
    expect(reply.status, `${laui}: ${reply.text}`).to.equal(200);
    found.set(laui, reply.json as View);
  }
  return found;
};

const EVENT_COLUMNS = 'position, stream_id, revision, id, type, data, metadata, recorded_at';
/** A row of the compact log with what it refers to (its stream, type and command's metadata). */
const LOG_COLUMNS = 'l.position, s.name, l.revision, l.id, t.name, l.version, l.data, m.metadata, m.recorded_at';
const LOG_FROM = 'log l JOIN log_streams s ON s.id = l.stream JOIN log_types t ON t.id = l.type JOIN log_metadata m ON m.id = l.metadata';

/** The rows of an event log (the legacy `events` table, then the compact `log`), up to `head` when given. */
const eventRows = (file: string, head = Number.MAX_SAFE_INTEGER): unknown[] => {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return [
      ...db.prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE position <= ? ORDER BY position`).all(head),
      ...db.prepare(`SELECT ${LOG_COLUMNS} FROM ${LOG_FROM} WHERE l.position <= ? ORDER BY l.position`).all(head),
    ];
  } finally {
    db.close();
  }
};

/** When a write was sent and acknowledged, relative to the backup command's run. */
type Phase = 'before' | 'during' | 'after';
interface Write {
  laui: string;
  kind: 'create' | 'update';
  /** The item's version the write made (an update's reply). */
  version: number | null;
  sent: Phase;
  acknowledged: Phase;
}

/**
 * What can be asserted of a backup taken under concurrent writes: its log is exactly the source's log
 * up to the head position its manifest gives (one moment of the log, no torn write); every write
 * acknowledged before the backup began is in it and none sent after it ended is; writes in flight
 * while it ran are in it or not, as that moment decides. So the restored service is compared item by
 * item, every field, with a reference service started on the source's log cut at that same position
 * (with the source's keys): what the source served at the moment of the backup.
 */
describe('backup and restore of DATA_DIR under a write load (npm run cli -- backup / restore)', function () {
  this.timeout(600_000);
  const base = mkdtempSync(join(tmpdir(), 'backup-spec-'));
  const backupFile = join(base, 'service.backup');
  let source: TestService;
  let task = '';
  let fixtures: string[] = [];
  const writes: Write[] = [];
  let backupOutput = { stdout: '', stderr: '' };
  let snapshotsAtBackup: string[] = [];

  before(async () => {
    // Snapshots every few events: some are written while the backup runs (a backup must leave them out).
    source = await startTestService({ SNAPSHOT_INTERVAL_EVENTS: '20' });
    const admin = catalogClient(source, (await source.login()).token);
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
    const { folders } = await admin.bootstrap('load-co');
    fixtures = [bed.tree.account_laui, bed.tree.project_laui, bed.connection, bed.workflow, operator, task];

    // The write load: three writers create payloads, two change the ones already made (each its own
    // half, so that no two updates race on one item), all the while the backup runs.
    let phase: Phase = 'before';
    let writing = true;
    let n = 0;
    const created: string[] = [];
    const creator = async () => {
      while (writing) {
        const sent = phase;
        const reply = await admin.create({ item_type: 'payload', name: `p-${n++}`, parent_laui: folders.payload, content: { n, text: 'x'.repeat(200) } });
        expect(reply.status, reply.text).to.equal(200);
        const laui = (reply.json as { item_laui: string }).item_laui;
        created.push(laui);
        writes.push({ laui, kind: 'create', version: null, sent, acknowledged: phase });
      }
    };
    const updater = (half: number) => async () => {
      let round = 0;
      while (writing) {
        const mine = created.filter((_, index) => index % 2 === half);
        const laui = mine[round++ % Math.max(1, mine.length)];
        if (laui === undefined) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          continue;
        }
        const sent = phase;
        const reply = await admin.post('/update', { item_laui: laui, content: { round, half, text: 'y'.repeat(200) } });
        expect(reply.status, reply.text).to.equal(200);
        writes.push({ laui, kind: 'update', version: (reply.json as { version: number }).version, sent, acknowledged: phase });
      }
    };
    const writers = [creator(), creator(), creator(), updater(0)(), updater(1)()];
    const snapshots = join(source.dataDir, 'snapshots');
    await waitUntil(() => writes.length >= 300 && existsSync(snapshots) && readdirSync(snapshots).some((name) => name.endsWith('.snap')), 'the load has written and a snapshot is on disk', 120_000);

    phase = 'during';
    snapshotsAtBackup = readdirSync(snapshots);
    backupOutput = await cli(source.dataDir, ['backup', '--out', backupFile]);
    phase = 'after';

    const afterCount = writes.filter((write) => write.sent === 'after').length;
    await waitUntil(() => writes.filter((write) => write.sent === 'after').length >= afterCount + 50, 'writes sent after the backup are acknowledged', 120_000);
    writing = false;
    await Promise.all(writers);
    await source.stop({ keepData: true });
  });

  after(() => {
    rmSync(base, { recursive: true, force: true });
    rmSync(source.dataDir, { recursive: true, force: true });
  });

  it('given a backup taken under a write load, when it ends, then it warns that the file holds the keys, and the file is 0600', () => {
    expect(backupOutput.stderr).to.match(/WARNING: .* holds the service's keys/);
    expect(JSON.parse(backupOutput.stdout)).to.include({ out: backupFile });
    expect(statSync(backupFile).mode & 0o777, 'the backup holds the keys: 0600').to.equal(0o600);
    // The load went on around it: writes were acknowledged before, while and after it ran.
    for (const phase of ['before', 'during', 'after'] as const) expect(writes.some((write) => write.acknowledged === phase), phase).to.equal(true);
    expect(writes.some((write) => write.kind === 'update' && write.acknowledged === 'before')).to.equal(true);
  });

  describe('restored into an empty DATA_DIR', () => {
    const restoredDir = join(base, 'restored');
    const referenceDir = join(base, 'reference');
    let restored: TestService | null = null;
    let reference: TestService | null = null;
    let head = 0;

    before(async () => {
      const { stdout } = await cli(restoredDir, ['restore', '--from', backupFile]);
      head = (JSON.parse(stdout) as { log_head_position: number }).log_head_position;
    });

    after(async () => {
      await restored?.stop();
      await reference?.stop();
    });

    it('given the restore, then DATA_DIR has the service modes, the keys, and no snapshot of the source', () => {
      expect(statSync(restoredDir).mode & 0o777).to.equal(0o700);
      expect(statSync(join(restoredDir, 'keys')).mode & 0o777).to.equal(0o700);
      expect(statSync(join(restoredDir, 'keys', 'encryption.key')).mode & 0o777).to.equal(0o600);
      expect(statSync(join(restoredDir, 'events.sqlite')).mode & 0o777).to.equal(0o600);
      expect(readFileSync(join(restoredDir, 'keys', 'encryption.key'))).to.deep.equal(readFileSync(join(source.dataDir, 'keys', 'encryption.key')));
      expect(snapshotsAtBackup.length, 'the source had snapshots when the backup ran').to.be.greaterThan(0);
      expect(existsSync(join(restoredDir, 'snapshots'))).to.equal(false);
    });

    it("given the restored log, then it is exactly the source's log up to the backup's head position", () => {
      expect(head).to.be.greaterThan(0);
      const rows = eventRows(join(restoredDir, 'events.sqlite'));
      expect(rows.length).to.equal(head);
      expect(rows).to.deep.equal(eventRows(join(source.dataDir, 'events.sqlite'), head));
      expect(eventRows(join(source.dataDir, 'events.sqlite')).length, 'the source went on past the backup').to.be.greaterThan(head);
    });

    it("given a service started on it, then it serves every item and link exactly as the source served them at the backup's position, every write acknowledged before the backup included and none sent after it", async () => {
      // The reference: the source's own log cut at the backup's head, with the source's keys.
      mkdirSync(referenceDir, { mode: 0o700 });
      const db = new Database(join(source.dataDir, 'events.sqlite'), { readonly: true });
      await db.backup(join(referenceDir, 'events.sqlite'));
      db.close();
      const cut = new Database(join(referenceDir, 'events.sqlite'));
      cut.prepare('DELETE FROM events WHERE position > ?').run(head);
      cut.prepare('DELETE FROM log WHERE position > ?').run(head);
      cut.close();
      cpSync(join(source.dataDir, 'keys'), join(referenceDir, 'keys'), { recursive: true });

      restored = await startTestService({}, {}, restoredDir);
      reference = await startTestService({}, {}, referenceDir);
      const restoredApi = catalogClient(restored, (await restored.login()).token);
      const referenceApi = catalogClient(reference, (await reference.login()).token);

      const items = await everything(restoredApi, 'item_filter');
      expect(items.length).to.be.greaterThan(300);
      expect(items).to.deep.equal(await everything(referenceApi, 'item_filter'));
      expect(await everything(restoredApi, 'link_filter')).to.deep.equal(await everything(referenceApi, 'link_filter'));
      const lauis = items.map((item) => String(item.laui));
      expect(await itemsByGet(restoredApi, lauis)).to.deep.equal(await itemsByGet(referenceApi, lauis));

      const byLaui = new Map(items.map((item) => [String(item.laui), item]));
      for (const laui of fixtures) expect(byLaui.has(laui), laui).to.equal(true);
      for (const write of writes) {
        const item = byLaui.get(write.laui);
        const version = Number(item?.version ?? -1);
        if (write.kind === 'create' && write.acknowledged === 'before') expect(item, `created before the backup: ${write.laui}`).to.not.equal(undefined);
        if (write.kind === 'create' && write.sent === 'after') expect(item, `created after the backup: ${write.laui}`).to.equal(undefined);
        if (write.kind === 'update' && write.acknowledged === 'before') expect(version, `updated before the backup: ${write.laui}`).to.be.at.least(write.version ?? 0);
        if (write.kind === 'update' && write.sent === 'after' && item !== undefined) expect(version, `updated after the backup: ${write.laui}`).to.be.below(write.version ?? 0);
      }
    });

    it('given a service started on it, when the task whose connection holds a sealed password runs, then the run opens it with the restored keys', async () => {
      const service = restored ?? (restored = await startTestService({}, {}, restoredDir));
      const api = catalogClient(service, (await service.login()).token);
      const reply = await service.client().post('/api/v1/task/run', { json: { item_laui: task }, token: api.token });
      expect(reply.status, reply.text).to.equal(200);
      const ended = await waitForItem<{ state: string; last_run_output: unknown }>(api, task, (item) => ['success', 'error', 'fail'].includes(item.state), 120_000);
      expect(ended.state, JSON.stringify(ended.last_run_output)).to.equal('success');
      expect(ended.last_run_output).to.deep.equal({ reversed: 'terc3s-em-erotser' });
    });
  });

  it('given a DATA_DIR that is not empty, when restored into, then the CLI exits non-zero, says why and leaves it as it was', async () => {
    const busy = mkdtempSync(join(base, 'busy-'));
    writeFileSync(join(busy, 'events.sqlite'), 'a service lives here');
    const refused = await failure(cli(busy, ['restore', '--from', backupFile]));
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.match(/is not empty \(events\.sqlite\)/);
    expect(readdirSync(busy)).to.deep.equal(['events.sqlite']);
    expect(readFileSync(join(busy, 'events.sqlite'), 'utf8')).to.equal('a service lives here');
  });

  it('given a damaged backup file, when restored, then the CLI exits non-zero, says it is damaged and writes nothing', async () => {
    const bytes = Buffer.from(readFileSync(backupFile));
    const middle = Math.floor(bytes.length / 2);
    bytes[middle] = (bytes[middle] ?? 0) ^ 0xff;
    const damaged = join(base, 'damaged.backup');
    writeFileSync(damaged, bytes);
    const target = join(base, 'from-damaged');
    const refused = await failure(cli(target, ['restore', '--from', damaged]));
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.match(/damaged backup/);
    expect(existsSync(target)).to.equal(false);
    expect(readdirSync(base).filter((name) => name.includes('restore-'))).to.deep.equal([]);
  });

  it('given an existing backup file, when backed up again without --force, then the CLI exits non-zero and the file is kept', async () => {
    const before = readFileSync(backupFile);
    const refused = await failure(cli(source.dataDir, ['backup', '--out', backupFile]));
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.match(/exists: give --force/);
    expect(readFileSync(backupFile)).to.deep.equal(before);
  });
});
