import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Role } from '../../config.ts';
import { startService, type Service } from '../../service.ts';
import { scryptPasswords } from '../../auth/scryptPasswords.ts';
import { HttpClient } from '../../../test/support/HttpClient.ts';
import { catalogClient } from '../../../test/support/catalogFixture.ts';
import { signIn } from '../../../test/support/signIn.ts';
import { requireMongoDouble, type MongoDouble } from '../../../test/support/mongo-double/mongoDouble.ts';

/** Polls the API log of DATA_DIR until a line holds `text`. */
const waitForLine = async (dataDir: string, text: string, timeoutMs = 60_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const folder = join(dataDir, 'logs', 'API');
    const found = existsSync(folder) && readdirSync(folder).some((file) => readFileSync(join(folder, file), 'utf8').includes(text));
    if (found) return;
    if (Date.now() > deadline) throw new Error(`no API log line with "${text}" after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
};

/**
 * The distributed read path on a shared read store: a projector process writes the read models to
 * MongoDB (here the mongo-java-server DOUBLE, not MongoDB) and an api process, which projects
 * nothing, answers from them, waiting for the projector's checkpoint (read-your-writes). Both run in
 * this test process on one DATA_DIR (the SQLite log); roles are set after loading the config, the
 * bus being irrelevant to what is looked at.
 */
describe('an api and a projector on one MongoDB read store (wire-protocol double, not MongoDB)', function () {
  this.timeout(180_000);
  let double: MongoDouble | null = null;
  let dataDir = '';
  const services: Service[] = [];
  const registries: string[] = [];

  before(async function () {
    double = await requireMongoDouble(this);
    dataDir = mkdtempSync(join(tmpdir(), 'orchestrator-mongo-roles-'));
  });

  after(async () => {
    for (const service of services.splice(0).reverse()) await service.close();
    await double?.release();
    for (const registry of registries.splice(0)) rmSync(registry, { recursive: true, force: true });
    if (dataDir !== '') rmSync(dataDir, { recursive: true, force: true });
  });

  const start = async (role: Role, database: string, extra: Record<string, string> = {}): Promise<Service> => {
    // Two services in this one process, both with the default run identities as root: each claims
    // them in a registry of its own (test/support/testService.ts), not in the host's.
    const registry = mkdtempSync(join(tmpdir(), 'run-uids-'));
    registries.push(registry);
    const env = { PORT: '0', DATA_DIR: dataDir, ADMIN_PASSWORD: 'admin-password-1', SQLITE_SYNCHRONOUS: 'normal', WORKER_POOL_SIZE: '0', MONGO_URL: double!.url, MONGO_DATABASE: database, WORKER_RUN_AS_REGISTRY: registry, ...extra };
    const service = await startService({ ...loadConfig(env), role }, { passwords: scryptPasswords(2 ** 10), announce: () => undefined });
    services.push(service);
    return service;
  };

  it('given a projector and an api process, when the api writes, then it answers once the projector applied the write, and the api projects nothing itself; a projector restarted with READ_MODELS_REBUILD swaps rebuilt models in while the api answers', async () => {
    const database = `roles_${randomBytes(4).toString('hex')}`;
    const projector = await start('projector', database);
    const api = await start('api', database);
    expect(api.projections, 'the api role follows the projector').to.equal(null);
    expect(projector.projections).to.not.equal(null);

    const { token } = await signIn(api.url, 'admin', 'admin-password-1');
    const catalog = catalogClient({ client: () => new HttpClient(api.url) }, token);
    const tree = await catalog.bootstrap('acme');
    const workflow = await catalog.createOk({ item_type: 'folder.workflow', name: 'wf', parent_laui: tree.folders.workflow });
    // Read-your-writes across processes: the create answered after the projector's checkpoint passed it.
    const read = await catalog.get({ item_laui: workflow });
    expect(read.status, read.text).to.equal(200);
    expect((read.json as { name: string }).name).to.equal('wf');
    const position = projector.projections!.position();
    expect(await api.readModels.waitFor(position, 60_000)).to.equal(true);

    // READ_MODELS_REBUILD: a projector restarted with it replays the log into fresh collections and
    // swaps them in while the api keeps answering from the live ones.
    await projector.close();
    services.splice(services.indexOf(projector), 1);
    const rebuilding = await start('projector', database, { READ_MODELS_REBUILD: 'true' });
    await waitForLine(dataDir, 'Read models rebuilt and swapped in');
    const after = await catalog.get({ item_laui: workflow });
    expect(after.status, after.text).to.equal(200);
    expect((after.json as { name: string }).name).to.equal('wf');
    const next = await catalog.createOk({ item_type: 'folder.workflow', name: 'wf2', parent_laui: tree.folders.workflow });
    expect((await catalog.get({ item_laui: next })).status, 'the rebuilt models stay live').to.equal(200);
    expect(rebuilding.projections!.position() > position, "the rebuilt projector is past the first write").to.equal(true);
  });
});
