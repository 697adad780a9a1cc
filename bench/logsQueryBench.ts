import { createWriteStream, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { loadConfig } from '../ops/config.ts';
import { startService } from '../ops/service.ts';
import { percentile } from './latencyFigures.ts';

const DAY = '2024-05-01';
const LEVELS = ['info', 'info', 'info', 'warning', 'error'];

/** `lines` log lines of one TASK day, shaped like the service's own (a run's session lines). */
const writeDay = async (file: string, lines: number): Promise<number> => {
  const out = createWriteStream(file);
  const start = Date.parse(`${DAY}T00:00:00.000Z`);
  let chunk = '';
  let bytes = 0;
  for (let index = 0; index < lines; index += 1) {
    chunk += `${JSON.stringify({
      timestamp: new Date(start + Math.floor((index * 86_400_000) / lines)).toISOString(),
      level: LEVELS[index % LEVELS.length],
      category: 'TASK',
      message: `run output line ${index}`,
      step: 'run',
      session_id: `session-${index % 1000}`,
      task_laui: '65f0c0ffee00000000000001',
      task_name: 'nightly-load',
      logical_date: DAY,
    })}\n`;
    if (chunk.length >= 1 << 20) {
      bytes += chunk.length;
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  bytes += chunk.length;
  out.end(chunk);
  await once(out, 'finish');
  return bytes;
};

/**
 * POST /api/v1/logs/query over one day of `lines` generated lines (the issue: 1,000,000), against
 * the same SQL through DuckDB directly in this process: one instance opened once (warm), the same
 * threads and memory limit, a view `logs` over the same file with the same read_json options. The
 * service pays what the direct side does not: HTTP, a fresh sandboxed instance per query, the
 * statement checks and the JSON answer. Rounds alternate sides (ABBA) after one warm-up each.
 */
export async function benchLogsQuery(opts: { dir: string; lines?: number; rounds?: number }): Promise<Array<Record<string, unknown>>> {
  const lines = opts.lines ?? 1_000_000;
  const rounds = opts.rounds ?? 6;
  const dataDir = mkdtempSync(join(opts.dir, 'logs-query-'));
  const folder = join(dataDir, 'logs', 'TASK');
  mkdirSync(folder, { recursive: true });
  const file = join(folder, `${DAY}.jsonl`);
  const bytes = await writeDay(file, lines);

  // No warm interpreter pool: its processes starting would compete for the cores with the figures.
  const config = loadConfig({ PORT: '0', DATA_DIR: dataDir, ADMIN_PASSWORD: 'bench-password-1', WORKER_POOL_SIZE: '0' });
  const service = await startService(config, { announce: () => undefined });
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const direct = await DuckDBInstance.create(':memory:', { threads: String(config.logQuery.threads), memory_limit: `${config.logQuery.memoryLimitMb}MB` });
  const connection = await direct.connect();
  try {
    await connection.run(
      `CREATE VIEW logs AS SELECT * FROM read_json(['${file.replace(/'/g, "''")}'], format = 'newline_delimited', union_by_name = true, ignore_errors = true)`,
    );
    const queries = [
      { name: 'count', sql: 'SELECT count(*) AS lines FROM logs' },
      { name: 'group_by_level', sql: 'SELECT level, count(*) AS lines FROM logs GROUP BY level ORDER BY level' },
    ];
    const figures: Array<Record<string, unknown>> = [];
    for (const query of queries) {
      const viaService = async (): Promise<unknown> => {
        const response = await fetch(`${service.url}/api/v1/logs/query`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ category: 'TASK', date: DAY, sql: query.sql }),
        });
        const body = (await response.json()) as { rows?: unknown[][]; error?: string };
        if (!body.rows) throw new Error(`POST /logs/query: ${JSON.stringify(body)}`);
        return body.rows;
      };
      const viaDuckDB = async (): Promise<unknown> => (await connection.runAndReadAll(query.sql)).getRowsJson();
      const times = { service: [] as number[], direct: [] as number[] };
      const answers: Record<string, unknown> = {};
      const measure = async (side: 'service' | 'direct', measured: boolean) => {
        const started = performance.now();
        answers[side] = await (side === 'service' ? viaService() : viaDuckDB());
        if (measured) times[side].push(performance.now() - started);
      };
      await measure('direct', false);
      await measure('service', false);
      for (let round = 0; round < rounds; round += 1) {
        const order = round % 4 === 0 || round % 4 === 3 ? (['direct', 'service'] as const) : (['service', 'direct'] as const);
        for (const side of order) await measure(side, true);
      }
      const servicePerQuery = percentile([...times.service].sort((a, b) => a - b), 0.5);
      const directPerQuery = percentile([...times.direct].sort((a, b) => a - b), 0.5);
      const ratio = Number((servicePerQuery / directPerQuery).toFixed(2));
      figures.push({
        figure: `logs.query.${query.name}`,
        unit: 'ms',
        lines,
        file_mb: Number((bytes / 1024 / 1024).toFixed(1)),
        sql: query.sql,
        p50: servicePerQuery,
        max: Number(Math.max(...times.service).toFixed(2)),
        baseline: { what: 'the same SQL through DuckDB directly (warm instance, same threads and memory limit)', p50: directPerQuery },
        ratio,
        rounds,
        same_answer: JSON.stringify(answers.service) === JSON.stringify(answers.direct).replace(/"(\d+)"/g, '$1'),
        target: 'p50 <= 1.5x direct and <= 2000 ms',
        pass: ratio <= 1.5 && servicePerQuery <= 2000,
      });
    }
    return figures;
  } finally {
    connection.closeSync();
    direct.closeSync();
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
