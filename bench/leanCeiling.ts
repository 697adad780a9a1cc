import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { percentile } from './latencyFigures.ts';
import { readProcStat } from './machineCpu.ts';

/**
 * The ceiling of the run pipeline's own components (issue 34): how many no-op jobs a second a
 * pipeline that keeps only what a run needs gets on this machine, measured the way the peers
 * harness measures the service (16 clients each running its task again once a watcher polling a
 * listing every ~1 ms saw it end; the server's process tree's CPU per job).
 *
 * The server (bench/leanCeilingServer.ts, a process of its own) uses the service's real parts:
 * Koa over node:http, the SQLite event store with its writer thread (WAL, fsync per commit, group
 * commit, expected revisions, the hash chain), and ProcessCodeRunner running the peers' no-op
 * operator (run, then check_completion) in a reused process. Per job it makes the service's two
 * durable commits over two streams (the queue's and the task's, three events each) and keeps the
 * tasks' states in a Map. Nothing else: no access checks, validation, templating, read store,
 * projections, logs or metrics.
 *
 * `npx tsx bench/leanCeiling.ts [sustained|latency|batch] [seconds|jobs]`: one JSON line, for the
 * harness's sustained load (above), its latency (one run at a time, polled every ~1 ms) or its
 * batch (1,000 tasks, 16 per request). Compare it with graphile-worker's in the same window (the
 * peers harness) and with the service's: the gap between the service and this figure is what the
 * service's layers cost; the gap between this figure and graphile-worker's is what the components
 * themselves allow.
 */
/** Uncounted seconds before the sustained window: the harness's 2 unless LEAN_WARM_SECONDS says otherwise. */
const WARM_SECONDS = Number(process.env.LEAN_WARM_SECONDS ?? 2);
const IN_FLIGHT = 16;

const dir = mkdtempSync(join(tmpdir(), 'lean-ceiling-'));
const server: ChildProcess = fork(new URL('./leanCeilingServer.ts', import.meta.url), [dir], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: ['--import', 'tsx'] });
const port = await new Promise<number>((resolve, reject) => {
  server.once('message', (message) => resolve(Number((message as { port: number }).port)));
  server.once('exit', (code) => reject(new Error(`lean server exited ${code}`)));
});

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const call = (method: string, path: string, body?: unknown): Promise<unknown> =>
  new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))) : reject(new Error(`${path}: ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });

/** CPU ms of a process tree, the reaped children included (as the peers harness counts it). */
const treeCpuMs = (root: number): number => {
  const procs = readdirSync('/proc').flatMap((name) => {
    const stat = /^\d+$/.test(name) ? readProcStat(`/proc/${name}/stat`) : null;
    return stat === null ? [] : [{ pid: Number(name), ...stat }];
  });
  const children = new Map<number, number[]>();
  for (const proc of procs) children.set(proc.ppid, [...(children.get(proc.ppid) ?? []), proc.pid]);
  const spent = new Map(procs.map((proc) => [proc.pid, proc.ownMs + proc.reapedMs]));
  let total = 0;
  const walk = (pid: number): void => {
    total += spent.get(pid) ?? 0;
    for (const child of children.get(pid) ?? []) walk(child);
  };
  walk(root);
  return total;
};

/** CPU ms of one process's own threads: its main thread, and the others (writer thread, V8's helpers). */
const threadsCpuMs = (pid: number): { main: number; others: number } => {
  let main = 0;
  let others = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    // A thread that ended meanwhile counts nothing.
    const ms = readProcStat(`/proc/${pid}/task/${tid}/stat`)?.ownMs ?? 0;
    if (Number(tid) === pid) main += ms;
    else others += ms;
  }
  return { main, others };
};

/** The server's CPU split from a first reading, per job. */
const cpuSince = (jobs: number): (() => Record<string, number>) => {
  const pid = server.pid ?? 0;
  const tree0 = treeCpuMs(pid);
  const threads0 = threadsCpuMs(pid);
  return () => {
    const tree = treeCpuMs(pid) - tree0;
    const threads = threadsCpuMs(pid);
    const main = threads.main - threads0.main;
    const others = threads.others - threads0.others;
    const per = (ms: number) => Number((ms / jobs).toFixed(3));
    return { server_cpu_ms_per_job: per(tree), main_thread_ms_per_job: per(main), other_threads_ms_per_job: per(others), run_processes_ms_per_job: per(tree - main - others) };
  };
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
type Listed = Array<{ id: string; state: string; iteration: number }>;

/** A watcher of runs, as the harness's: one listing at a time, of the oldest waiting batch's tasks, ~1 ms apart. */
const watcher = () => {
  const waiting = new Map<string, { iteration: number; resolve: () => void; batch: string }>();
  const batches: string[][] = [];
  let watching = true;
  const loop = (async () => {
    while (watching) {
      const batch = batches.find((ids) => ids.some((id) => waiting.has(id)));
      if (!batch) {
        await sleep(1);
        continue;
      }
      const list = (await call('GET', `/tasks?ids=${batch.join(',')}`)) as Listed;
      let left = false;
      for (const task of list) {
        const wait = waiting.get(task.id);
        if (!wait) continue;
        if (task.iteration >= wait.iteration && task.state === 'success') {
          waiting.delete(task.id);
          wait.resolve();
        } else left = true;
      }
      if (left) await sleep(1);
    }
  })();
  const iterations = new Map<string, number>();
  return {
    batch: (ids: string[]) => batches.push(ids),
    /** Resolves once the task's next run read success. */
    until: (id: string, batch: string) => {
      const iteration = (iterations.get(id) ?? 0) + 1;
      iterations.set(id, iteration);
      return new Promise<void>((resolve) => waiting.set(id, { iteration, resolve, batch }));
    },
    stop: async () => {
      watching = false;
      await loop;
    },
  };
};

/** 16 clients, each running its own task again once the watcher saw it end (the harness's throughput). */
const sustained = async (): Promise<Record<string, unknown>> => {
  const seconds = Number(process.argv[3] ?? 10);
  const ids = Array.from({ length: IN_FLIGHT }, (_, index) => `t${index}`);
  const watch = watcher();
  watch.batch(ids);
  let phase: 'warm' | 'measure' = 'warm';
  let done = 0;
  const deadline = performance.now() + (WARM_SECONDS + seconds) * 1000;
  const slot = async (id: string): Promise<void> => {
    while (performance.now() < deadline) {
      const ended = watch.until(id, 'one');
      await call('POST', '/run', { id });
      await ended;
      if (phase === 'measure' && performance.now() <= deadline) done += 1;
    }
  };
  const slots = ids.map(slot);
  await sleep(WARM_SECONDS * 1000);
  phase = 'measure';
  const counted = cpuSince(1);
  const started = performance.now();
  await sleep(Math.max(0, deadline - performance.now()));
  const cpu = counted();
  const elapsed = (performance.now() - started) / 1000;
  await Promise.all(slots);
  await watch.stop();
  const perJob = Object.fromEntries(Object.entries(cpu).map(([key, ms]) => [key, Number((ms / done).toFixed(3))]));
  return { in_flight: IN_FLIGHT, jobs_per_s: Number((done / elapsed).toFixed(1)), ...perJob, seconds: Number(elapsed.toFixed(2)) };
};

/** One task at a time: POST, then list it every ~1 ms until it read success (the harness's latency). */
const latency = async (): Promise<Record<string, unknown>> => {
  const jobs = Number(process.argv[3] ?? 300);
  const once = async (iteration: number): Promise<void> => {
    await call('POST', '/run', { id: 'solo' });
    for (;;) {
      const [task] = (await call('GET', '/tasks?ids=solo')) as Listed;
      if (task && task.iteration >= iteration && task.state === 'success') return;
      await sleep(1);
    }
  };
  let iteration = 0;
  for (let index = 0; index < 10; index += 1) await once((iteration += 1));
  const times: number[] = [];
  const counted = cpuSince(jobs);
  for (let index = 0; index < jobs; index += 1) {
    const started = performance.now();
    await once((iteration += 1));
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { n: jobs, p50_ms: percentile(times, 0.5), p99_ms: percentile(times, 0.99), ...counted() };
};

/** 1,000 tasks in batches of 16, one request per batch, one after the other, until all read success (the harness's batch). */
const batch = async (): Promise<Record<string, unknown>> => {
  const jobs = Number(process.argv[3] ?? 1000);
  const watch = watcher();
  const runBatches = async (prefix: string, count: number): Promise<void> => {
    const waits: Array<Promise<void>> = [];
    for (let made = 0; made < count; made += 16) {
      const ids = Array.from({ length: Math.min(16, count - made) }, (_, index) => `${prefix}${made + index}`);
      const name = ids[0] as string;
      watch.batch(ids);
      for (const id of ids) waits.push(watch.until(id, name));
      await call('POST', '/runs', { ids });
    }
    await Promise.all(waits);
  };
  await runBatches('w', 64);
  await sleep(200);
  const counted = cpuSince(jobs);
  const started = performance.now();
  await runBatches('b', jobs);
  const elapsed = (performance.now() - started) / 1000;
  const cpu = counted();
  await watch.stop();
  return { jobs, jobs_per_s: Number((jobs / elapsed).toFixed(1)), ...cpu };
};

try {
  const scenario = process.argv[2] ?? 'sustained';
  const figures = scenario === 'latency' ? await latency() : scenario === 'batch' ? await batch() : await sustained();
  console.log(JSON.stringify({ figure: `lean_ceiling.${scenario}`, ...figures }));
} finally {
  agent.destroy();
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('exit', resolve));
  rmSync(dir, { recursive: true, force: true });
}
