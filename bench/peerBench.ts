import { execFile, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { makeWorkerUtils, type WorkerUtils } from 'graphile-worker';
import { openBed, terminalWatcher } from './taskBench.ts';
import { machineCpuMs } from './machineCpu.ts';

/**
 * The peer ratio (issue 34): the service's sustained no-op throughput beside graphile-worker's
 * (PostgreSQL, durable, concurrency 8, the peer the issue's targets name) in the same run,
 * interleaved rounds, 16 jobs in flight in both. The service: 16 clients, each running its own
 * task again once its last run read `success` (POST /task/run, reuse process); graphile-worker: 16
 * clients, each adding a job and waiting until its row is gone (its worker in a child process, as a
 * deployment runs it). CPU per job is the whole machine's (service, or worker + PostgreSQL, and the
 * clients), so both carry their clients. The project's peers harness (its README) measures more
 * scenarios across processes; this figure keeps the ratio in the project's own bench.
 *
 * A third system, the lean pipeline of bench/leanCeiling.ts (the service's own parts, none of its
 * layers: what they allow), runs in the same rounds: `share_of_lean` is how much of its components'
 * ceiling the service reaches (its jobs/s only; its CPU is counted per process tree, not per machine).
 */
export async function benchPeers(opts: { dir: string; seconds: number; rounds: number; postgresUrl: string }): Promise<Array<Record<string, unknown>>> {
  const reachable = await postgresReachable(opts.postgresUrl);
  if (!reachable) return [{ figure: 'peers.sustained', skipped: `PostgreSQL not reachable at ${opts.postgresUrl} (BENCH_PG_HOST, BENCH_PG_PORT, BENCH_PG_USER, BENCH_PG_DATABASE)` }];
  const service: Sample[] = [];
  const graphile: Sample[] = [];
  const lean: Sample[] = [];
  const systems = ['service', 'graphile', 'lean'];
  for (let round = 0; round < opts.rounds; round += 1) {
    // Rotated each round: none always runs on the warmer machine.
    const order = [...systems.slice(round % systems.length), ...systems.slice(0, round % systems.length)];
    for (const system of order) {
      if (system === 'service') service.push(await serviceSustained(opts.dir, opts.seconds));
      else if (system === 'graphile') graphile.push(await graphileSustained(opts.postgresUrl, opts.seconds));
      else lean.push(await leanSustained(opts.seconds));
    }
  }
  const rate = (samples: Sample[]) => median(samples.map((sample) => sample.jobsPerSecond));
  const cpu = (samples: Sample[]) => median(samples.map((sample) => sample.cpuMsPerJob));
  return [
    {
      figure: 'peers.sustained.jobs_per_s',
      unit: 'jobs/s (median of rounds)',
      service: rate(service),
      graphile_worker_c8: rate(graphile),
      ratio: Number((rate(service) / rate(graphile)).toFixed(2)),
      target_ratio: '>= 1.5',
      lean_pipeline: rate(lean),
      share_of_lean: Number((rate(service) / rate(lean)).toFixed(2)),
      rounds: opts.rounds,
      seconds: opts.seconds,
      samples: { service: service.map((sample) => sample.jobsPerSecond), graphile_worker_c8: graphile.map((sample) => sample.jobsPerSecond), lean_pipeline: lean.map((sample) => sample.jobsPerSecond) },
    },
    {
      figure: 'peers.sustained.machine_cpu_ms_per_job',
      unit: 'ms of machine CPU per job (median of rounds)',
      service: cpu(service),
      graphile_worker_c8: cpu(graphile),
      ratio: Number((cpu(service) / cpu(graphile)).toFixed(2)),
      target_ratio: '<= 1.0',
    },
  ];
}

interface Sample {
  jobsPerSecond: number;
  cpuMsPerJob: number;
}

const IN_FLIGHT = 16;
/**
 * Uncounted seconds before each window (BENCH_PEER_WARM_SECONDS, default 1). A fresh service spends
 * its first tens of seconds under load compiling its hot path (V8's optimizing compiler on helper
 * threads: ~28% of the service's CPU in the peers harness's 2 s warm-up and 10 s window, issue 34),
 * graphile-worker, a far smaller hot path, a second or so: 30 measures both warm.
 */
const WARM_MS = Number(process.env.BENCH_PEER_WARM_SECONDS ?? 1) * 1000;

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return Number((sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN).toFixed(2));
};

/** Told when the counted window starts and ends (a CPU profile of that window: bench/profileSustained.ts). */
export interface CountedWindow {
  begin(): Promise<void>;
  end(): Promise<void>;
}

/** `slot` run by IN_FLIGHT clients: warmed up, then counted for `seconds`. */
async function sustained(seconds: number, slot: (client: number) => Promise<void>, window?: CountedWindow): Promise<Sample> {
  let counting = false;
  let count = 0;
  const deadline = performance.now() + WARM_MS + seconds * 1000;
  const clients = Array.from({ length: IN_FLIGHT }, async (_, client) => {
    while (performance.now() < deadline) {
      await slot(client);
      if (counting && performance.now() <= deadline) count += 1;
    }
  });
  await new Promise((resolve) => setTimeout(resolve, WARM_MS));
  await window?.begin();
  counting = true;
  const [started, cpu] = [performance.now(), machineCpuMs()];
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - performance.now())));
  const elapsed = (performance.now() - started) / 1000;
  const used = machineCpuMs() - cpu;
  await window?.end();
  await Promise.all(clients);
  return { jobsPerSecond: Number((count / elapsed).toFixed(1)), cpuMsPerJob: Number((used / Math.max(count, 1)).toFixed(3)) };
}

/** The lean pipeline's sustained figure (bench/leanCeiling.ts, its server and clients in processes of their own). */
async function leanSustained(seconds: number): Promise<Sample> {
  const script = fileURLToPath(new URL('./leanCeiling.ts', import.meta.url));
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, ['--import', 'tsx', script, 'sustained', String(seconds)], { env: { ...process.env, LEAN_WARM_SECONDS: String(WARM_MS / 1000) }, timeout: (seconds + 120) * 1000 }, (error, out) =>
      error ? reject(error) : resolve(out),
    ),
  );
  const figure = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { jobs_per_s?: number; server_cpu_ms_per_job?: number };
  return { jobsPerSecond: Number(figure.jobs_per_s ?? Number.NaN), cpuMsPerJob: Number(figure.server_cpu_ms_per_job ?? Number.NaN) };
}

export async function serviceSustained(dir: string, seconds: number, window?: CountedWindow): Promise<Sample> {
  const bed = await openBed(dir, {});
  try {
    const operator = await bed.operator('javascript', true, 'peers');
    const tasks: string[] = [];
    for (let index = 0; index < IN_FLIGHT; index += 1) tasks.push(String((await bed.api('/catalog/create', { item_type: 'task', ...bed.createAndRun(`peer-${index}`, operator) })).item_laui));
    // One watcher of the read model for every client (one timer), as the harness's one poller.
    const watcher = terminalWatcher(bed.service.readStore.collection('items'));
    try {
      return await sustained(seconds, async (client) => {
        // Each client keeps to its own task (a task runs once at a time).
        const laui = tasks[client] as string;
        const ended = watcher.until(laui);
        await bed.api('/task/run', { item_laui: laui });
        await ended;
      }, window);
    } finally {
      watcher.stop();
    }
  } finally {
    await bed.close();
  }
}

async function graphileSustained(connectionString: string, seconds: number): Promise<Sample> {
  const utils: WorkerUtils = await makeWorkerUtils({ connectionString });
  await utils.migrate();
  const worker = fork(new URL('./graphilePeerWorker.mjs', import.meta.url), [connectionString, '8'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  // One poller for every client: the jobs left of those waited for, one query per pass.
  const poller = new pg.Client({ connectionString });
  await poller.connect();
  const pending = new Map<string, () => void>();
  let watching = true;
  const watch = (async () => {
    while (watching) {
      if (pending.size > 0) {
        const ids = [...pending.keys()];
        const { rows } = await poller.query<{ id: string }>('select id::text as id from graphile_worker._private_jobs where id = any($1::bigint[])', [ids]);
        const left = new Set(rows.map((row) => row.id));
        for (const id of ids) {
          if (left.has(id)) continue;
          pending.get(id)?.();
          pending.delete(id);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  })();
  try {
    await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('exit', reject);
    });
    return await sustained(seconds, async () => {
      const job = await utils.addJob('noop', {});
      await new Promise<void>((resolve) => pending.set(String(job.id), resolve));
    });
  } finally {
    watching = false;
    await watch;
    worker.send('stop');
    await new Promise((resolve) => worker.once('exit', resolve));
    await poller.end();
    await utils.release();
  }
}

async function postgresReachable(connectionString: string): Promise<boolean> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}
