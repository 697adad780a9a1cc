import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Role } from './config.ts';
import { roleParts } from './roles.ts';
import { startService, type Service } from './service.ts';
import { scryptPasswords } from './auth/scryptPasswords.ts';
import { HttpClient } from '../test/support/HttpClient.ts';

/**
 * One process per role. Roles other than `all` need a shared bus, which loadConfig insists on; here
 * the in-process bus stands in (set after loading), since only what each role serves is looked at.
 */
describe('roles: what one process of each role serves', function () {
  this.timeout(60_000);
  let dataDir: string;
  let service: Service | null = null;

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'orchestrator-role-'));
  });

  afterEach(async () => {
    await service?.close();
    service = null;
    rmSync(dataDir, { recursive: true, force: true });
  });

  const start = async (role: Role, env: Record<string, string> = {}): Promise<HttpClient> => {
    // As root the run identities are claimed in a registry (ops/worker/runIdentityRegistry.ts): the test's, not the host's.
    const registry = join(dataDir, 'run-uids');
    const config = { ...loadConfig({ PORT: '0', DATA_DIR: dataDir, ADMIN_PASSWORD: 'admin-password-1', SQLITE_SYNCHRONOUS: 'normal', WORKER_POOL_SIZE: '0', WORKER_RUN_AS_REGISTRY: registry, ...env }), role };
    service = await startService(config, { passwords: scryptPasswords(2 ** 10), announce: () => undefined });
    return new HttpClient(service.url);
  };

  for (const role of ['worker', 'scheduler', 'projector'] as const) {
    it(`given a ${role} process, when asked for its health and for a REST route, then it names its role and serves no route`, async () => {
      const client = await start(role);
      const health = await client.get('/healthz');
      expect(health.status).to.equal(200);
      expect(health.json).to.deep.equal({ status: 'ok', role });
      // Not recorded for the OpenAPI check: the document describes the API, which this role does not serve.
      const route = await new HttpClient(client.baseUrl, { record: false }).get('/api/v1/user/me');
      expect(route.status).to.equal(404);
      expect(route.json).to.deep.equal({ detail: 'Not Found' });
    });
  }

  for (const role of ['worker', 'scheduler', 'projector'] as const) {
    it(`given a ${role} process and METRICS_TOKEN, when /metrics is read, then it serves its own figures (worker slots only in a worker)`, async () => {
      const client = await start(role, { METRICS_TOKEN: 'role-metrics-token', WORKER_CONCURRENCY: '3' });
      expect((await client.get('/metrics')).status).to.equal(401);
      const reply = await client.get('/metrics', { token: 'role-metrics-token' });
      expect(reply.status, reply.text).to.equal(200);
      expect(reply.text).to.include('# TYPE orchestrator_task_runs_total counter');
      expect(reply.text).to.include('# TYPE orchestrator_projection_lag_events gauge');
      expect(reply.text).to.match(new RegExp(`^orchestrator_worker_slots_capacity ${role === 'worker' ? 3 : 0}$`, 'm'));
    });
  }

  it('given an api process, when a client signs in, then the REST routes answer and the admin exists', async () => {
    const client = await start('api');
    expect((await client.get('/healthz')).json).to.deep.equal({ status: 'ok', role: 'api' });
    expect((await client.get('/api/v1/user/me')).status).to.equal(401);
    await client.get('/api/v1/auth?client_id=cli&redirect_uri=http://localhost/cb&state=s1');
    const login = await client.post('/api/v1/login', { form: { username: 'admin', password: 'admin-password-1' } });
    expect(login.status, login.text).to.equal(303);
  });
});

describe('roleParts: which parts each role runs', () => {
  it('given each role on a memory read store, then every role projects for itself and each runs its own part', () => {
    const memory = { kind: 'memory' } as const;
    expect(roleParts({ role: 'all', readStore: memory })).to.deep.equal({ role: 'all', api: true, worker: true, scheduler: true, publisher: true, projects: true });
    expect(roleParts({ role: 'api', readStore: memory })).to.deep.equal({ role: 'api', api: true, worker: false, scheduler: false, publisher: false, projects: true });
    expect(roleParts({ role: 'worker', readStore: memory })).to.include({ api: false, worker: true, scheduler: false, publisher: false, projects: true });
    expect(roleParts({ role: 'scheduler', readStore: memory })).to.include({ api: false, worker: false, scheduler: true, projects: true });
    expect(roleParts({ role: 'projector', readStore: memory })).to.include({ api: false, worker: false, scheduler: false, publisher: true, projects: true });
  });

  it('given a shared MongoDB read store, then only the projector (and all) write the read models', () => {
    const mongo = { kind: 'mongodb', url: 'mongodb://m', database: 'd' } as const;
    const projecting = (['all', 'api', 'projector', 'worker', 'scheduler'] as const).filter((role) => roleParts({ role, readStore: mongo }).projects);
    expect(projecting).to.deep.equal(['all', 'projector']);
  });
});
