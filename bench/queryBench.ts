import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../ops/config.ts';
import { startService } from '../ops/service.ts';
import { loginToken } from './catalogBench.ts';
import { percentile } from './latencyFigures.ts';
import { memoryDuring } from './memoryDuring.ts';

/** Where the bench finds PostgreSQL (the test database by default: README, Tests). */
const POSTGRES = {
  host: process.env.BENCH_PG_HOST ?? '127.0.0.1',
  port: Number(process.env.BENCH_PG_PORT ?? 5432),
  user: process.env.BENCH_PG_USER ?? 'postgres',
  database: process.env.BENCH_PG_DATABASE ?? 'test',
  password: process.env.BENCH_PG_PASSWORD ?? '',
};

/** 10,000 rows of four columns of the common kinds (integer, text, numeric, timestamptz). */
const TEN_THOUSAND = "SELECT g AS id, 'row number ' || g AS label, (g * 1.25)::numeric(12,2) AS amount, timestamptz '2024-05-01 00:00:00+00' + g * interval '1 second' AS at FROM generate_series(1, 10000) g";
/** 100,000,000 rows, streamed by the server (a set-returning function in the select list): the service reads 10,001. */
const HUNDRED_MILLION = "SELECT generate_series(1, 100000000) AS n, repeat('x', 100) AS pad";

/**
 * `query` suite (issue 22): POST /api/v1/query/execute on PostgreSQL.
 *  1. A 10,000-row result through the endpoint against the same SQL with `pg` directly in this
 *     process, rows as arrays like the endpoint's: the baseline opens a new connection per query as
 *     the service does (it never pools); the same with one warm connection is reported beside it.
 *     Rounds alternate sides (ABBA) after a warm-up of each. Target: p50 <= 2x the baseline.
 *  2. A query over a 100,000,000-row series, capped at 10,000 rows: the service's memory growth
 *     (peak RSS of this process, which runs the service and the client) against the same growth for
 *     a plain 10,000-row answer. Target: < 100 MB.
 * Without a reachable PostgreSQL the suite reports why and passes nothing.
 */
export async function benchQuery(opts: { dir: string; rounds?: number }): Promise<Array<Record<string, unknown>>> {
  const rounds = opts.rounds ?? 20;
  const probe = new pg.Client({ ...POSTGRES, password: () => POSTGRES.password, connectionTimeoutMillis: 3000 });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
  } catch (error) {
    return [{ figure: 'query', skipped: `PostgreSQL at ${POSTGRES.host}:${POSTGRES.port} is not reachable (${error instanceof Error ? error.message : String(error)}); BENCH_PG_* settings` }];
  }
  const dataDir = mkdtempSync(join(opts.dir, 'query-'));
  const config = loadConfig({ PORT: '0', DATA_DIR: dataDir, ADMIN_PASSWORD: 'bench-password-1', WORKER_POOL_SIZE: '0' });
  const service = await startService(config, { announce: () => undefined });
  try {
    const token = await loginToken(service, 'bench-password-1');
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const post = async (path: string, body: unknown): Promise<unknown> => {
      const response = await fetch(`${service.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      const json = (await response.json()) as unknown;
      if (response.status !== 200) throw new Error(`${path}: ${response.status} ${JSON.stringify(json).slice(0, 300)}`);
      return json;
    };
    const tree = (await post('/api/v1/catalog/bootstrap', { account_name: 'bench', project_name: 'main' })) as { folders: { connection: string } };
    const { item_laui: connection } = (await post('/api/v1/catalog/create', {
      item_type: 'connection.postgresql',
      name: 'bench-pg',
      parent_laui: tree.folders.connection,
      content: { host: POSTGRES.host, port: POSTGRES.port, user: POSTGRES.user, database: POSTGRES.database, password: POSTGRES.password },
    })) as { item_laui: string };
    const viaService = async (sql: string) => (await post('/api/v1/query/execute', { connection_laui: connection, sql })) as { rows: unknown[][]; row_count: number; truncated: boolean };
    const viaPgFresh = async (sql: string) => {
      const client = new pg.Client({ ...POSTGRES, password: () => POSTGRES.password });
      await client.connect();
      try {
        return (await client.query({ text: sql, rowMode: 'array' })).rows;
      } finally {
        await client.end();
      }
    };
    const viaPgWarm = async (sql: string) => (await probe.query({ text: sql, rowMode: 'array' })).rows;

    // Memory first, after one small query has loaded the driver: the capped query pays whatever a
    // first large answer costs (an upper bound), the plain 10,000-row baseline comes after it.
    await viaService('SELECT 1');
    const capped = await memoryDuring(() => viaService(HUNDRED_MILLION));
    const plain = await memoryDuring(() => viaService(TEN_THOUSAND));

    const times = { service: [] as number[], fresh: [] as number[], warm: [] as number[] };
    const sides = { service: viaService, fresh: viaPgFresh, warm: viaPgWarm } as const;
    const counts: Record<string, number> = {};
    const measure = async (side: keyof typeof sides, measured: boolean) => {
      const started = performance.now();
      const answer = await sides[side](TEN_THOUSAND);
      const elapsed = performance.now() - started;
      counts[side] = Array.isArray(answer) ? answer.length : answer.row_count;
      if (measured) times[side].push(elapsed);
    };
    for (const side of ['fresh', 'warm', 'service'] as const) await measure(side, false);
    for (let round = 0; round < rounds; round += 1) {
      const order = round % 2 === 0 ? (['fresh', 'warm', 'service'] as const) : (['service', 'warm', 'fresh'] as const);
      for (const side of order) await measure(side, true);
    }
    const p50 = (side: keyof typeof times) => percentile([...times[side]].sort((a, b) => a - b), 0.5);
    const ratio = Number((p50('service') / p50('fresh')).toFixed(2));

    const cappedStarted = performance.now();
    await viaService(HUNDRED_MILLION);
    const cappedMs = Number((performance.now() - cappedStarted).toFixed(1));
    return [
      {
        figure: 'query.postgres.10k_rows',
        unit: 'ms (request to parsed answer)',
        rows: counts.service,
        p50: p50('service'),
        p99: percentile([...times.service].sort((a, b) => a - b), 0.99),
        rounds,
        baseline: { what: 'the same SQL with pg directly, rows as arrays, a new connection per query (as the service: never pooled)', p50: p50('fresh'), rows: counts.fresh },
        warm_connection: { what: 'the same with one pg connection kept open (a pool)', p50: p50('warm'), ratio: Number((p50('service') / p50('warm')).toFixed(2)) },
        ratio,
        target: 'p50 <= 2x the baseline',
        pass: ratio <= 2 && counts.service === 10_000,
      },
      {
        figure: 'query.postgres.cap_100m_rows.memory_growth',
        value: capped.rssGrowthMb,
        unit: 'MB RSS of the service process, peak during the query minus before',
        heap_growth_mb: capped.heapGrowthMb,
        rows: capped.result.row_count,
        truncated: capped.result.truncated,
        duration_ms: cappedMs,
        sql: HUNDRED_MILLION,
        baseline: { what: 'a plain 10,000-row answer through the endpoint (the same rows returned, nothing capped)', rss_growth_mb: plain.rssGrowthMb, heap_growth_mb: plain.heapGrowthMb },
        target: 'RSS growth < 100 MB (the cap stops reading at 10,001 rows)',
        pass: capped.rssGrowthMb < 100 && capped.result.truncated && capped.result.row_count === 10_000,
      },
    ];
  } finally {
    await probe.end().catch(() => undefined);
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
