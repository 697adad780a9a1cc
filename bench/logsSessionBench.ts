import { createReadStream, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Worker } from 'node:worker_threads';
import { newLaui } from '../shared/ids.ts';
import { loadConfig } from '../ops/config.ts';
import { sessionLogFile } from '../ops/logging/sessionLogFile.ts';
import { startService } from '../ops/service.ts';
import { memoryDuring } from './memoryDuring.ts';

/** Each measurement starts after what the previous one left has settled. */
const SETTLE = { settleMs: 200 };

/**
 * An SSE consumer on its own thread: times (from its own request start) the first event, the first
 * `log` event and the `done` event, parsing every data line as a client would.
 */
const SSE_READER = `
const { request } = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');
parentPort.once('message', () => {
  const started = performance.now();
  let buffer = '';
  let firstEvent = null;
  let firstLog = null;
  let logs = 0;
  const req = request({ host: '127.0.0.1', port: workerData.port, path: workerData.path }, (res) => {
    res.setEncoding('utf8');
    res.on('data', (chunk) => {
      const frames = (buffer + chunk).split('\\n\\n');
      buffer = frames.pop();
      for (const frame of frames) {
        const data = frame.indexOf('\\ndata: ');
        if (data < 0) continue;
        const event = frame.slice(7, data);
        JSON.parse(frame.slice(data + 7));
        firstEvent ??= performance.now() - started;
        if (event === 'log') {
          firstLog ??= performance.now() - started;
          logs += 1;
        } else if (event === 'done' || event === 'error') {
          parentPort.postMessage({ firstEvent, firstLog, logs, last: event, total: performance.now() - started });
          req.destroy();
        }
      }
    });
  });
  req.on('error', (error) => parentPort.postMessage({ error: String(error) }));
  req.end();
});
parentPort.postMessage('ready');
`;

interface SseRun {
  firstEvent: number;
  firstLog: number;
  logs: number;
  last: string;
  total: number;
}

/**
 * GET /api/v1/logs/session/{id} over a finished session of `lines` lines (the last one carrying
 * `session_end`), through the real service, against reading the same file directly (a line reader
 * over a read stream, each line of the session parsed) in the same run: time to the first event and
 * to the first log line, total time, and memory growth (RSS and heap, peak against before). The
 * reader is a worker thread, so its parsing does not share the server's event loop; it is started
 * before the clock runs, so its own memory is in the "before".
 */
export async function benchLogsSession(opts: { dir: string; lines?: number }): Promise<Array<Record<string, unknown>>> {
  const lines = opts.lines ?? 100_000;
  const dataDir = mkdtempSync(join(opts.dir, 'logs-session-'));
  const logs = join(dataDir, 'logs');
  const sessionId = newLaui(new Date('2026-01-01T10:00:00Z'));
  const { dir, file } = sessionLogFile(logs, sessionId, '');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, file);
  const taskLaui = newLaui(new Date('2026-01-01T09:00:00Z'));
  const body: string[] = [];
  for (let index = 0; index < lines; index += 1) {
    const timestamp = new Date(Date.parse('2026-01-01T10:00:00Z') + index).toISOString();
    const last = index === lines - 1;
    body.push(
      JSON.stringify({
        timestamp,
        level: index % 10 === 9 ? 'error' : 'info',
        category: 'TASK',
        step: last ? 'finish' : 'run',
        session_id: sessionId,
        task_laui: taskLaui,
        task_name: 'bench.task',
        logical_date: '2026-01-01T00:00:00Z',
        message: last ? 'Task ended: success' : `row ${index}: processed batch of 500 records from the source table in 12 ms`,
        ...(last ? { status: 'success', session_end: true } : {}),
      }),
    );
  }
  writeFileSync(path, `${body.join('\n')}\n`);
  body.length = 0;
  const fileBytes = statSync(path).size;

  const config = loadConfig({ PORT: '0', DATA_DIR: dataDir, ADMIN_PASSWORD: 'bench-password-1', WORKER_POOL_SIZE: '0', WORKER_SANDBOX: 'none', SQLITE_SYNCHRONOUS: 'normal' });
  const service = await startService(config, { announce: () => undefined });
  const port = Number(new URL(service.url).port);

  const direct = async (): Promise<{ firstLog: number; logs: number; total: number }> => {
    const started = performance.now();
    let firstLog: number | null = null;
    let count = 0;
    for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Infinity })) {
      if (!line.includes(sessionId)) continue;
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (entry.session_id !== sessionId) continue;
      firstLog ??= performance.now() - started;
      count += 1;
    }
    return { firstLog: firstLog ?? NaN, logs: count, total: performance.now() - started };
  };

  const sse = async (): Promise<SseRun & { rssGrowthMb: number; heapGrowthMb: number }> => {
    const reader = new Worker(SSE_READER, { eval: true, workerData: { port, path: `/api/v1/logs/session/${sessionId}` }, execArgv: [] });
    try {
      await new Promise<void>((resolve, reject) => {
        reader.once('message', () => resolve());
        reader.once('error', reject);
      });
      const done = new Promise<SseRun>((resolve, reject) => {
        reader.once('message', (message: SseRun | { error: string }) => ('error' in message ? reject(new Error(message.error)) : resolve(message)));
        reader.once('error', reject);
      });
      const measured = await memoryDuring(async () => {
        reader.postMessage('go');
        return done;
      }, SETTLE);
      if (measured.result.logs !== lines || measured.result.last !== 'done') throw new Error(`SSE read ${measured.result.logs} of ${lines} lines, ended with ${measured.result.last}`);
      return { ...measured.result, rssGrowthMb: measured.rssGrowthMb, heapGrowthMb: measured.heapGrowthMb };
    } finally {
      await reader.terminate();
    }
  };

  try {
    // Warm both paths once (page cache, JIT), then alternate: A B B A.
    await direct();
    await sse();
    const directRuns = [await memoryDuring(direct, SETTLE)];
    const sseRuns = [await sse(), await sse()];
    directRuns.push(await memoryDuring(direct, SETTLE));
    const best = <T>(runs: T[], key: (run: T) => number): number => Math.min(...runs.map(key));
    const worst = <T>(runs: T[], key: (run: T) => number): number => Math.max(...runs.map(key));
    const round = (value: number, digits = 1) => Number(value.toFixed(digits));

    const firstLogMs = best(sseRuns, (run) => run.firstLog);
    const sseSeconds = best(sseRuns, (run) => run.total) / 1000;
    const directSeconds = best(directRuns, (run) => run.result.total) / 1000;
    const rssGrowth = worst(sseRuns, (run) => run.rssGrowthMb);
    const heapGrowth = worst(sseRuns, (run) => run.heapGrowthMb);
    const fileMb = round(fileBytes / 1024 / 1024);
    // Bounded: a stream holds a block and what waits for the socket; loading the file would hold
    // it whole (as text, twice its bytes) and its parsed lines.
    const memoryBound = Math.max(64, fileMb);
    return [
      {
        figure: 'logs.session.first_event',
        value: round(firstLogMs),
        unit: 'ms (request start to the first log event)',
        first_status_event_ms: round(best(sseRuns, (run) => run.firstEvent)),
        lines,
        baseline: 'direct read of the same file: first line of the session parsed',
        baselineValue: round(best(directRuns, (run) => run.result.firstLog)),
        target: '<= 100 ms',
        pass: firstLogMs <= 100,
      },
      {
        figure: 'logs.session.stream',
        value: round(sseSeconds, 3),
        unit: 's (request start to done)',
        lines_per_second: Math.round(lines / sseSeconds),
        file_mb: fileMb,
        baseline: 'direct read of the same file (line reader, each session line parsed)',
        baselineValue: round(directSeconds, 3),
        ratio: round(sseSeconds / directSeconds, 2),
      },
      {
        figure: 'logs.session.memory_growth',
        value: rssGrowth,
        unit: 'MB RSS, peak during the stream minus before (worst run)',
        heap_growth_mb: heapGrowth,
        file_mb: fileMb,
        baseline: 'direct read of the same file: RSS / heap growth',
        baselineValue: worst(directRuns, (run) => run.rssGrowthMb),
        baseline_heap_growth_mb: worst(directRuns, (run) => run.heapGrowthMb),
        target: `RSS growth < ${memoryBound} MB (a stream, not a load of the ${fileMb} MB file)`,
        pass: rssGrowth < memoryBound,
      },
    ];
  } finally {
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
