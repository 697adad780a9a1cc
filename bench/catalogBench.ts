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
import { runInterleaved, type InterleavedFigures, type InterleavedRun } from './runInterleaved.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** Rounds each side's SECONDS are split into, alternated with the baseline's. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);

/** An endpoint and its bare Koa baseline in alternating rounds, with this bench's seconds, rounds and warm-up. */
const interleaved = (baseline: InterleavedRun['baseline'], subject: InterleavedRun['subject']) =>
  runInterleaved({ baseline, subject, seconds: SECONDS, rounds: ROUNDS, warmupSeconds: WARMUP_SECONDS });

/**
 * A figure of the service beside its baseline, measured in the same rounds: the rate, its latency,
 * errors and per-round rates, and the CPU per request on the one event loop both servers share
 * (unlike req/s, this hardly moves when other processes compete for the cores, so it shows where a
 * change went).
 */
const besideBaseline = (figure: string, unit: string, subject: InterleavedFigures, baselineFigure: string, baseline: InterleavedFigures, method: string) => ({
  figure,
  value: subject.perSecond,
  unit,
  p50_ms: subject.p50,
  p99_ms: subject.p99,
  errors: subject.errors,
  rounds: subject.rounds,
  main_thread: subject.main_thread,
  baseline: { figure: baselineFigure, value: baseline.perSecond, unit: 'req/s', p50_ms: baseline.p50, p99_ms: baseline.p99, rounds: baseline.rounds, main_thread: baseline.main_thread },
  ratio: Number((subject.perSecond / baseline.perSecond).toFixed(3)),
  method,
});

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
    const { baseline: bareCreate, subject: create } = await interleaved(
      (round) => ({ url: `${bare.url}/bare`, method: 'POST', headers: auth, bodyTemplate: body(round), concurrency: 32 }),
      (round) => ({ url: `${service.url}/api/v1/catalog/create`, method: 'POST', headers: auth, bodyTemplate: body(round), concurrency: 32 }),
    );
    const commitsAfter = groupCommitStats(service);
    // Counts the warm-up's commits too: the batch size is what it shows.
    const commits = commitsBefore && commitsAfter
      ? { transactions: commitsAfter.batches - commitsBefore.batches, appends: commitsAfter.appends - commitsBefore.appends }
      : undefined;
    const created = await service.readStore.collection('items').find({ where: { parent_laui: tree.folders.payload }, limit: 1000 });
    const { baseline: bareGet, subject: get } = await interleaved(
      () => ({ url: `${bare.url}/bare/`, method: 'GET', headers: auth, paths: created.map((item) => item.id), concurrency: 32 }),
      () => ({ url: `${service.url}/api/v1/catalog/get`, method: 'GET', headers: auth, paths: created.map((item) => `?item_laui=${item.id}`), concurrency: 32 }),
    );
    // A client watching its runs lists a folder's items again and again (the peers' watcher).
    const folderCreated = await fetch(`${service.url}/api/v1/catalog/create`, { method: 'POST', headers: auth, body: JSON.stringify({ item_type: 'folder.payload', name: 'listed', parent_laui: tree.folders.payload }) });
    const listed = ((await folderCreated.json()) as { item_laui: string }).item_laui;
    for (let n = 0; n < 16; n += 1) {
      await fetch(`${service.url}/api/v1/catalog/create`, { method: 'POST', headers: auth, body: JSON.stringify({ item_type: 'payload', name: `listed-${n}`, parent_laui: listed, content: { n } }) });
    }
    const { baseline: bareList, subject: list } = await interleaved(
      () => ({ url: `${bare.url}/bare/`, method: 'GET', headers: auth, paths: created.map((item) => item.id), concurrency: 16 }),
      () => ({ url: `${service.url}/api/v1/catalog/get`, method: 'GET', headers: auth, paths: [`?item_laui=${listed}&parent_or_child=child&per_page=1000`], concurrency: 16 }),
    );
    const method = `${ROUNDS} alternating rounds per side (ABBA) after a ${WARMUP_SECONDS} s warm-up of each; rounds: req/s of each round`;
    return [
      {
        ...besideBaseline('catalog.create.concurrency32', 'items/s', create, 'bare Koa JSON POST', bareCreate, method),
        ...(commits ? { event_store: { ...commits, mean_batch: Math.round((commits.appends / commits.transactions) * 10) / 10 } } : {}),
        target: '>= 3000 items/s and >= 25% of bare',
        pass: create.perSecond >= 3000 && create.perSecond / bareCreate.perSecond >= 0.25 && create.errors === 0,
      },
      {
        ...besideBaseline('catalog.get.by_laui', 'req/s', get, 'bare Koa GET', bareGet, method),
        target: '>= 50% of bare',
        pass: get.perSecond / bareGet.perSecond >= 0.5 && get.errors === 0,
      },
      besideBaseline('catalog.get.children16', 'listings/s', list, 'bare Koa GET', bareList, `${method}; a folder of 16 payloads listed (children, per_page 1000) by 16 clients`),
    ];
  } finally {
    await new Promise<void>((resolve) => bare.server.close(() => resolve()));
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
