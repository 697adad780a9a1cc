import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Koa from 'koa';
import Router from '@koa/router';
import { koaBody } from 'koa-body';
import { newLaui } from '../shared/ids.ts';
import { loadConfig } from '../ops/config.ts';
import { startService, type Service } from '../ops/service.ts';
import { SqliteEventStore } from '../ops/event-store/sqlite/SqliteEventStore.ts';
import { runInterleaved } from './runInterleaved.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** Rounds each side's SECONDS are split into, alternated with the baseline's. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);

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
 * endpoint measured the same way in the same run (durable SQLite, synchronous=FULL), in rounds
 * alternating with it after a warm-up of both (runInterleaved). Each side also reports what a
 * request cost the event loop they share (main_thread).
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
    // Each round (and the warm-up, round -1) names its items apart: a name taken twice is a 409.
    const body = (round: number): string =>
      JSON.stringify({ item_type: 'payload', name: `r${round + 1}-{{n}}`, parent_laui: tree.folders.payload, content: { n: 1 } });

    const commitsBefore = groupCommitStats(service);
    const { baseline: bareCreate, subject: create } = await runInterleaved({
      baseline: (round) => ({ url: `${bare.url}/bare`, method: 'POST', headers: auth, bodyTemplate: body(round), concurrency: 32 }),
      subject: (round) => ({ url: `${service.url}/api/v1/catalog/create`, method: 'POST', headers: auth, bodyTemplate: body(round), concurrency: 32 }),
      seconds: SECONDS,
      rounds: ROUNDS,
      warmupSeconds: WARMUP_SECONDS,
    });
    const commitsAfter = groupCommitStats(service);
    // Counts the warm-up's commits too: the batch size is what it shows.
    const commits = commitsBefore && commitsAfter
      ? { transactions: commitsAfter.batches - commitsBefore.batches, appends: commitsAfter.appends - commitsBefore.appends }
      : undefined;
    const created = await service.readStore.collection('items').find({ where: { parent_laui: tree.folders.payload }, limit: 1000 });
    const { baseline: bareGet, subject: get } = await runInterleaved({
      baseline: () => ({ url: `${bare.url}/bare/`, method: 'GET', headers: auth, paths: created.map((item) => item.id), concurrency: 32 }),
      subject: () => ({ url: `${service.url}/api/v1/catalog/get`, method: 'GET', headers: auth, paths: created.map((item) => `?item_laui=${item.id}`), concurrency: 32 }),
      seconds: SECONDS,
      rounds: ROUNDS,
      warmupSeconds: WARMUP_SECONDS,
    });
    // A client watching its runs lists a folder's items again and again (the peers' watcher).
    const folderCreated = await fetch(`${service.url}/api/v1/catalog/create`, { method: 'POST', headers: auth, body: JSON.stringify({ item_type: 'folder.payload', name: 'listed', parent_laui: tree.folders.payload }) });
    const listed = ((await folderCreated.json()) as { item_laui: string }).item_laui;
    for (let n = 0; n < 16; n += 1) {
      await fetch(`${service.url}/api/v1/catalog/create`, { method: 'POST', headers: auth, body: JSON.stringify({ item_type: 'payload', name: `listed-${n}`, parent_laui: listed, content: { n } }) });
    }
    const { baseline: bareList, subject: list } = await runInterleaved({
      baseline: () => ({ url: `${bare.url}/bare/`, method: 'GET', headers: auth, paths: created.map((item) => item.id), concurrency: 16 }),
      subject: () => ({ url: `${service.url}/api/v1/catalog/get`, method: 'GET', headers: auth, paths: [`?item_laui=${listed}&parent_or_child=child&per_page=1000`], concurrency: 16 }),
      seconds: SECONDS,
      rounds: ROUNDS,
      warmupSeconds: WARMUP_SECONDS,
    });
    const method = `${ROUNDS} alternating rounds per side (ABBA) after a ${WARMUP_SECONDS} s warm-up of each; rounds: req/s of each round`;
    return [
      {
        figure: 'catalog.create.concurrency32',
        value: create.perSecond,
        unit: 'items/s',
        p50_ms: create.p50,
        p99_ms: create.p99,
        errors: create.errors,
        rounds: create.rounds,
        main_thread: create.main_thread,
        ...(commits ? { event_store: { ...commits, mean_batch: Math.round((commits.appends / commits.transactions) * 10) / 10 } } : {}),
        baseline: { figure: 'bare Koa JSON POST', value: bareCreate.perSecond, unit: 'req/s', p50_ms: bareCreate.p50, p99_ms: bareCreate.p99, rounds: bareCreate.rounds, main_thread: bareCreate.main_thread },
        ratio: Number((create.perSecond / bareCreate.perSecond).toFixed(3)),
        method,
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
        rounds: get.rounds,
        main_thread: get.main_thread,
        baseline: { figure: 'bare Koa GET', value: bareGet.perSecond, unit: 'req/s', p99_ms: bareGet.p99, rounds: bareGet.rounds, main_thread: bareGet.main_thread },
        ratio: Number((get.perSecond / bareGet.perSecond).toFixed(3)),
        method,
        target: '>= 50% of bare',
        pass: get.perSecond / bareGet.perSecond >= 0.5 && get.errors === 0,
      },
      {
        figure: 'catalog.get.children16',
        value: list.perSecond,
        unit: 'listings/s',
        p50_ms: list.p50,
        p99_ms: list.p99,
        errors: list.errors,
        rounds: list.rounds,
        main_thread: list.main_thread,
        baseline: { figure: 'bare Koa GET', value: bareList.perSecond, unit: 'req/s', p99_ms: bareList.p99, rounds: bareList.rounds, main_thread: bareList.main_thread },
        ratio: Number((list.perSecond / bareList.perSecond).toFixed(3)),
        method: `${method}; a folder of 16 payloads listed (children, per_page 1000) by 16 clients`,
      },
    ];
  } finally {
    await new Promise<void>((resolve) => bare.server.close(() => resolve()));
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
