import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { performance as perfHooks } from 'node:perf_hooks';
import Koa from 'koa';
import Router from '@koa/router';
import { koaBody } from 'koa-body';
import { newLaui } from '../../shared/ids.ts';
import { loadConfig } from '../config.ts';
import { startService, type Service } from '../service.ts';
import { SqliteEventStore } from '../event-store/sqlite/SqliteEventStore.ts';
import { runLoad } from './loadGenerator.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);

/**
 * CPU time of this process's main thread (the service's event loop; the load generator runs on
 * a worker thread), in ms, from Linux's per-thread accounting; NaN elsewhere. Unlike throughput,
 * CPU per request hardly moves when other processes compete for the cores.
 */
const mainThreadCpuMs = (): number => {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    // Fields after the command name, which is parenthesized and may contain spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime (fields 14 and 15)
    return ticks * 10; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
};

/** What a load run cost the main thread per request: CPU, and loop time busy (CPU or blocked, e.g. in fsync). */
const mainThreadCost = async (run: () => Promise<{ requests: number }>): Promise<{ cpu_ms_per_req: number; busy_ms_per_req: number; loop_utilization: number }> => {
  const cpuBefore = mainThreadCpuMs();
  const eluBefore = perfHooks.eventLoopUtilization();
  const { requests } = await run();
  const elu = perfHooks.eventLoopUtilization(eluBefore);
  const round3 = (value: number): number => Math.round(value * 1000) / 1000;
  return {
    cpu_ms_per_req: round3((mainThreadCpuMs() - cpuBefore) / requests),
    busy_ms_per_req: round3(elu.active / requests),
    loop_utilization: round3(elu.utilization),
  };
};

const listen = async (server: Server): Promise<string> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

/** The baseline: Koa with the same body parser and router, doing no work. */
const bareKoa = async (): Promise<{ url: string; server: Server }> => {
  const app = new Koa();
  const router = new Router();
  const doc = { laui: newLaui(), item_type: 'payload', name: 'p', content: { n: 1 }, version: 1 };
  router.post('/bare', (ctx) => {
    ctx.body = { item_laui: newLaui(), echo: (ctx.request.body as { name?: unknown }).name ?? null };
  });
  router.get('/bare/:id', (ctx) => {
    ctx.body = { ...doc, laui: ctx.params.id };
  });
  app.use(koaBody()).use(router.routes());
  const server = createServer(app.callback());
  return { url: await listen(server), server };
};

/** The service's group commit counters, when its store is the SQLite one. */
const groupCommitStats = (service: Service): { batches: number; appends: number } | undefined =>
  service.eventStore instanceof SqliteEventStore ? service.eventStore.groupCommitStats() : undefined;

export const loginToken = async (service: Service, password: string): Promise<string> => {
  const jar = new Map<string, string>();
  const go = async (path: string, init: RequestInit = {}) => {
    const response = await fetch(new URL(path, service.url), {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      jar.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1));
    }
    await response.arrayBuffer();
    return response;
  };
  await go('/api/v1/auth?client_id=bench&redirect_uri=http://localhost/cb&state=s');
  const login = await go('/api/v1/login', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `username=admin&password=${password}` });
  const redirect = await go(login.headers.get('location') ?? '');
  const code = new URL(redirect.headers.get('location') ?? '').searchParams.get('code');
  await go('/api/v1/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ grant_type: 'authorization_code', credentials: { code } }) });
  return jar.get('frontend_token') ?? '';
};

/**
 * POST /catalog/create at concurrency 32 and GET /catalog/get by laui, each beside a bare Koa
 * endpoint measured the same way in the same run (durable SQLite, synchronous=FULL). The create
 * figure also reports what each item cost the service's event loop (main_thread).
 */
export async function benchCatalogHttp(opts: { dir: string }): Promise<Array<Record<string, unknown>>> {
  const dataDir = mkdtempSync(join(opts.dir, 'catalog-'));
  const service = await startService(loadConfig({ PORT: '0', DATA_DIR: dataDir, ADMIN_PASSWORD: 'bench-password-1' }), { announce: () => undefined });
  const bare = await bareKoa();
  try {
    const token = await loginToken(service, 'bench-password-1');
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const bootstrap = await fetch(`${service.url}/api/v1/catalog/bootstrap`, { method: 'POST', headers: auth, body: JSON.stringify({ account_name: 'bench' }) });
    const tree = (await bootstrap.json()) as { folders: { payload: string } };
    const body = JSON.stringify({ item_type: 'payload', name: 'p{{n}}', parent_laui: tree.folders.payload, content: { n: 1 } });

    const bareCreate = await runLoad({ url: `${bare.url}/bare`, method: 'POST', headers: auth, bodyTemplate: body, concurrency: 32, seconds: SECONDS });
    const commitsBefore = groupCommitStats(service);
    let create: Awaited<ReturnType<typeof runLoad>> | undefined;
    const createCost = await mainThreadCost(async () => {
      create = await runLoad({ url: `${service.url}/api/v1/catalog/create`, method: 'POST', headers: auth, bodyTemplate: body, concurrency: 32, seconds: SECONDS });
      return create;
    });
    if (!create) throw new Error('the create load did not run');
    const commitsAfter = groupCommitStats(service);
    const commits = commitsBefore && commitsAfter
      ? { transactions: commitsAfter.batches - commitsBefore.batches, appends: commitsAfter.appends - commitsBefore.appends }
      : undefined;
    const created = await service.readStore.collection('items').find({ where: { parent_laui: tree.folders.payload }, limit: 1000 });
    const paths = created.map((item) => `?item_laui=${item.id}`);
    let bareGet: Awaited<ReturnType<typeof runLoad>> | undefined;
    const bareGetCost = await mainThreadCost(async () => {
      bareGet = await runLoad({ url: `${bare.url}/bare/`, method: 'GET', headers: auth, paths: created.map((item) => item.id), concurrency: 32, seconds: SECONDS });
      return bareGet;
    });
    let get: Awaited<ReturnType<typeof runLoad>> | undefined;
    const getCost = await mainThreadCost(async () => {
      get = await runLoad({ url: `${service.url}/api/v1/catalog/get`, method: 'GET', headers: auth, paths, concurrency: 32, seconds: SECONDS });
      return get;
    });
    if (!get || !bareGet) throw new Error('the get loads did not run');
    return [
      {
        figure: 'catalog.create.concurrency32',
        value: create.perSecond,
        unit: 'items/s',
        p50_ms: create.p50,
        p99_ms: create.p99,
        errors: create.errors,
        main_thread: createCost,
        ...(commits ? { event_store: { ...commits, mean_batch: Math.round((commits.appends / commits.transactions) * 10) / 10 } } : {}),
        baseline: { figure: 'bare Koa JSON POST', value: bareCreate.perSecond, unit: 'req/s', p50_ms: bareCreate.p50, p99_ms: bareCreate.p99 },
        ratio: Number((create.perSecond / bareCreate.perSecond).toFixed(3)),
        target: '>= 3000 items/s and >= 25% of bare',
        pass: create.perSecond >= 3000 && create.perSecond / bareCreate.perSecond >= 0.25 && create.errors === 0,
      },
      {
        figure: 'catalog.get.by_laui',
        value: get.perSecond,
        unit: 'req/s',
        p50_ms: get.p50,
        p99_ms: get.p99,
        errors: get.errors,
        // CPU per request on the one event loop both servers share: unlike req/s, this hardly moves
        // when other processes compete for the cores, so it shows where a change went.
        main_thread: getCost,
        baseline: { figure: 'bare Koa GET', value: bareGet.perSecond, unit: 'req/s', p99_ms: bareGet.p99, main_thread: bareGetCost },
        ratio: Number((get.perSecond / bareGet.perSecond).toFixed(3)),
        target: '>= 50% of bare',
        pass: get.perSecond / bareGet.perSecond >= 0.5 && get.errors === 0,
      },
    ];
  } finally {
    await new Promise<void>((resolve) => bare.server.close(() => resolve()));
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
