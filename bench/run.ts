import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchEventStore } from './eventStoreBench.ts';
import { benchRebuild } from './rebuildBench.ts';
import { benchLogin } from './loginBench.ts';
import { benchCatalogHttp } from './catalogBench.ts';
import { benchCatalogScale } from './catalogScaleBench.ts';
import { benchTasks } from './taskBench.ts';
import { benchActions } from './actionBench.ts';
import { benchScheduler } from './schedulerBench.ts';
import { benchSandbox } from './sandboxBench.ts';
import { benchEvents } from './eventsBench.ts';
import { benchLogsQuery } from './logsQueryBench.ts';
import { benchLogsSession } from './logsSessionBench.ts';
import { benchQuery } from './queryBench.ts';
import { benchBusKafka } from './busKafkaBench.ts';
import { benchFairShare } from './fairShareBench.ts';
import { benchEventLoop } from './eventLoopBench.ts';
import { benchStart } from './startBench.ts';
import { benchRestart } from './restartBench.ts';
import { benchPeers } from './peerBench.ts';
import { benchAsOf } from './asOfBench.ts';
import { benchLogSize } from './logSizeBench.ts';
import { benchHashChain } from './hashChainBench.ts';

/**
 * `npm run bench`: every figure as one JSON line on stdout, each beside the baseline measured in
 * the same run. BENCH_EVENTS scales the million-event figures down for a quick look.
 */
const events = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const only = process.env.BENCH_ONLY?.split(',');
const fairScale = Number(process.env.BENCH_FAIR_SCALE ?? 0.2);
const suites: Array<[string, (dir: string) => Promise<Array<Record<string, unknown>>>]> = [
  ['eventstore', (dir) => benchEventStore({ dir, events })],
  ['rebuild', (dir) => benchRebuild({ dir, events })],
  // Issue 36: what the hash chain costs the writer, per event and per transaction of task events.
  ['hashchain', (dir) => benchHashChain({ dir })],
  ['login', (dir) => benchLogin({ dir })],
  ['catalog', (dir) => benchCatalogHttp({ dir })],
  ['catalog-scale', (dir) => benchCatalogScale({ dir, items: events })],
  ['actions', (dir) => benchActions({ dir })],
  ['scheduler', () => benchScheduler()],
  ['tasks', (dir) => benchTasks({ dir, seconds: Number(process.env.BENCH_TASK_SECONDS ?? 20) })],
  // Another project's run behind a 10-run backlog on 2 worker slots, fair share vs FIFO. The issue's
  // 8 s and 1 s runs scaled by BENCH_FAIR_SCALE (default 0.2: 1.6 s and 0.2 s, ~25 s in all).
  ['fair-share', (dir) => benchFairShare({ dir, longMs: 8000 * fairScale, shortMs: 1000 * fairScale })],
  // 100,000 events by default (the figure); BENCH_EVENTS scales it like the others.
  ['events', (dir) => benchEvents({ dir, events: Math.min(events, 100_000) })],
  // 1,000,000 lines of one day by default (the figure); BENCH_LOG_LINES scales it.
  ['logs-query', (dir) => benchLogsQuery({ dir, lines: Number(process.env.BENCH_LOG_LINES ?? 1_000_000) })],
  // GET /logs/session/{id} over a 100,000-line session (the figure; BENCH_EVENTS scales it).
  ['logs-session', (dir) => benchLogsSession({ dir, lines: Math.min(events, 100_000) })],
  // POST /query/execute on PostgreSQL (BENCH_PG_* settings): 10,000 rows against pg directly, and a capped 100,000,000-row series.
  ['query', (dir) => benchQuery({ dir })],
  // The task pipeline on the Kafka bus vs the in-process bus (TEST_KAFKA_BROKERS, else .ci/kafka start).
  ['bus-kafka', (dir) => benchBusKafka({ dir, seconds: Number(process.env.BENCH_BUS_SECONDS ?? 10) })],
  // The event loop while a run prints 100,000 lines (ProcessCodeRunner, then the service), beside a ten-line run.
  ['event-loop', (dir) => benchEventLoop({ dir, rounds: Number(process.env.BENCH_EVENT_LOOP_ROUNDS ?? 4) })],
  // Issue 35: a restart from the read-model snapshot vs the whole log replayed (BENCH_RESTART_ITEMS, default 1,000,000; BENCH_RESTART_RUN_EVENTS, default 5,000,000).
  ['restart', (dir) => benchRestart({ dir, items: Number(process.env.BENCH_RESTART_ITEMS ?? 1_000_000), runEvents: Number(process.env.BENCH_RESTART_RUN_EVENTS ?? 5_000_000) })],
  // Issue 36: an as_of read of a 10,000-change item, fold snapshots against a plain fold, same run.
  ['asof', (dir) => benchAsOf({ dir, changes: Number(process.env.BENCH_ASOF_CHANGES ?? 10_000) })],
  // Issue 35: bytes of events.sqlite per no-op run (BENCH_LOGSIZE_RUNS, default 400), beside the same events in the previous layout.
  ['logsize', (dir) => benchLogSize({ dir, runs: Number(process.env.BENCH_LOGSIZE_RUNS ?? 400) })],
  // Issue 35: npm start's compiled bundle vs tsx, to /healthz on an empty DATA_DIR (alternating rounds).
  ['start', (dir) => benchStart({ dir, rounds: Number(process.env.BENCH_START_ROUNDS ?? 5) })],
  // Issue 34: the peer ratio, sustained no-op jobs beside graphile-worker (concurrency 8) on PostgreSQL (BENCH_PG_HOST, BENCH_PG_PORT, BENCH_PG_USER, BENCH_PG_DATABASE), interleaved rounds.
  [
    'peers',
    (dir) =>
      benchPeers({
        dir,
        seconds: Number(process.env.BENCH_PEER_SECONDS ?? 8),
        rounds: Number(process.env.BENCH_PEER_ROUNDS ?? 2),
        // The query bench's PostgreSQL settings.
        postgresUrl: `postgres://${process.env.BENCH_PG_USER ?? 'postgres'}@${process.env.BENCH_PG_HOST ?? '127.0.0.1'}:${process.env.BENCH_PG_PORT ?? 5432}/${process.env.BENCH_PG_DATABASE ?? 'test'}`,
      }),
  ],
  // ~3.5 minutes with the defaults: 2 rounds of 3 services (5 s windows) and of 2 runners (3 s windows).
  [
    'sandbox',
    (dir) =>
      benchSandbox({
        dir,
        seconds: Number(process.env.BENCH_SANDBOX_SECONDS ?? 5),
        rounds: Number(process.env.BENCH_SANDBOX_ROUNDS ?? 2),
        runnerSeconds: Number(process.env.BENCH_SANDBOX_RUNNER_SECONDS ?? 3),
      }),
  ],
];

const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'bench-'));
try {
  for (const [name, run] of suites) {
    if (only && !only.includes(name)) continue;
    for (const figure of await run(dir)) console.log(JSON.stringify(figure));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
