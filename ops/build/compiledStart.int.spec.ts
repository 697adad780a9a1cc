import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { catalogClient, waitForItem, type CatalogClient } from '../../test/support/catalogFixture.ts';
import { HttpClient } from '../../test/support/HttpClient.ts';
import { startRole, stopRole, type RoleProcess } from '../../test/support/roleProcess.ts';
import { signIn } from '../../test/support/signIn.ts';
import { taskBed } from '../../test/support/taskBed.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface BuildScript {
  ensureServiceBuilt(options: { force?: boolean; outDir?: string }): Promise<{ built: boolean; outDir: string }>;
}

/**
 * The compiled start (npm start = node dist/main.js): a bundle built into a folder of the test's own,
 * started without tsx, runs what reads files beside its sources at run time (the SQLite writer and
 * checkpointer threads, the worker's runtime scripts and fork servers, the native addons).
 */
describe('the compiled service (ops/build/buildService.mjs; npm start)', function () {
  this.timeout(240_000);
  let build: BuildScript;
  let outDir: string;
  let dataDir: string;
  let service: RoleProcess | null = null;

  before(async () => {
    build = (await import(join(REPO, 'ops', 'build', 'buildService.mjs'))) as BuildScript;
    // Inside the checkout, as dist/ is: the bundle resolves its packages from node_modules.
    outDir = mkdtempSync(join(REPO, '.dist-test-'));
    dataDir = mkdtempSync(join(tmpdir(), 'compiled-data-'));
  });

  after(async () => {
    if (service) await stopRole(service);
    rmSync(outDir, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('given no build, when ensured twice, then it builds once; a stamp of other sources builds again', async () => {
    expect((await build.ensureServiceBuilt({ outDir })).built).to.equal(true);
    expect((await build.ensureServiceBuilt({ outDir })).built, 'current: a no-op').to.equal(false);
    writeFileSync(join(outDir, '.source-hash'), 'sources of another checkout');
    expect((await build.ensureServiceBuilt({ outDir })).built, 'stale: built again').to.equal(true);
    expect(readFileSync(join(outDir, '.source-hash'), 'utf8')).to.match(/^[0-9a-f]{64}$/);
  });

  it('given the bundle, when started with node alone, then it serves, and JavaScript and Python runs succeed', async () => {
    service = await startRole('all', { PORT: '0', DATA_DIR: join(dataDir, 'data'), ADMIN_PASSWORD: 'admin-password-1', WORKER_RUN_AS_REGISTRY: join(dataDir, 'run-uids'), SQLITE_SYNCHRONOUS: 'normal' }, 120_000, join(outDir, 'main.js'));
    expect(service.output(), 'no TypeScript loader in the compiled start').to.not.match(/tsx/);
    expect((await new HttpClient(service.url).get('/healthz')).json).to.deep.include({ status: 'ok' });
    const admin: CatalogClient = catalogClient({ client: () => new HttpClient(service!.url) }, (await signIn(service.url, 'admin', 'admin-password-1')).token);
    const bed = await taskBed(admin, 'compiled-co', { name: 'c', content: {}, max_parallelism: 2 });
    const operators = {
      javascript: 'export function run() { return { ok: "js" }; }\n',
      python: 'def run(*args):\n    return {"ok": "py"}\n',
    };
    for (const [language, code] of Object.entries(operators)) {
      const operator = await admin.createOk({ item_type: 'operator', name: `${language}.operator`, parent_laui: bed.tree.folders.operator, codeblock: { language, code } });
      const run = await new HttpClient(service.url).post('/api/v1/task/run', { json: { item_type: 'task', ...bed.taskBody(`compiled-${language}`, operator) }, token: admin.token });
      expect(run.status, run.text).to.equal(200);
      const laui = (run.json as { item_laui: string }).item_laui;
      const ended = await waitForItem<{ state: string; last_run_output: unknown }>(admin, laui, (item) => ['success', 'error', 'fail', 'timeout'].includes(item.state), 60_000);
      expect(ended.state, JSON.stringify(ended.last_run_output)).to.equal('success');
    }
  });
});
