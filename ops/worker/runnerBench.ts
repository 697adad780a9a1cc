import { performance } from 'node:perf_hooks';
import type { Language, OperatorRunRequest } from '../../shared/ports/CodeRunner.ts';
import { ProcessCodeRunner } from './ProcessCodeRunner.ts';

export const MEMORY_MB = 128;
const NOOP: Record<Language, string> = {
  python: 'def run(connection, payload, context):\n    return {"ok": True}\n',
  javascript: 'export function run(connection, payload, context) { return { ok: true }; }\n',
};
/** The no-op operator as the service's task bench runs it: run, then check_completion answering success. */
const NOOP_POLLED: Record<Language, string> = {
  python: NOOP.python + 'def check_completion(connection, payload, context):\n    return {"status": "success"}\n',
  javascript: NOOP.javascript + 'export function check_completion() { return { status: "success" }; }\n',
};

export interface RunnerBenchOptions {
  /** Latency samples per mode (reuse takes 5x as many: they are cheap). Default 60. */
  samples?: number;
  /** Seconds of each throughput measurement. Default 3. */
  seconds?: number;
  /** Runs in flight during the fresh-process throughput measurements. Default [2, 8] (2: the CI machine's cores). */
  concurrency?: number[];
  /** Warm processes per pool. Default 2. */
  poolSize?: number;
  languages?: Language[];
  /** Also measure python with the fork server off (python3 spawned per process). Default true. */
  pythonSpawn?: boolean;
  /** Runs in flight during the extra reuse throughput figures (run + check_completion, as a worker slot per run). Default 16. */
  reuseConcurrency?: number;
  /** Runner protocol (ProcessCodeRunnerOptions.protocol); default the runner's. */
  protocol?: 'exec' | 'steps';
}

/**
 * No-op operator (run only, no check_completion, no finish) through ProcessCodeRunner, per language:
 * - latency with a fresh process per run, the pool refilled before each run (the warm path);
 * - latency with no pool (every run forks (python) or spawns (javascript) its process on demand);
 * - latency with reuse (one process serves consecutive runs);
 * - throughput over `seconds` with a fresh process per run at each concurrency, and with reuse
 *   at the first one; each throughput figure also gives the latency of its runs (p50, p99);
 * - reuse throughput at `reuseConcurrency` (16: the service's default worker slots), for the no-op
 *   and for a no-op whose check_completion answers success (what the task benches run), with
 *   maxIdleReusable = that concurrency as the service sets it;
 * - python only: fresh-process throughput with the fork server off (spawned python3), for comparison.
 * Figure names stay those of earlier runs for concurrency 2; other concurrencies get a `.c<n>` suffix.
 */
export async function benchRunner(options: RunnerBenchOptions = {}): Promise<Array<Record<string, unknown>>> {
  const samples = options.samples ?? 60;
  const seconds = options.seconds ?? 3;
  const levels = options.concurrency ?? [2, 8];
  const poolSize = options.poolSize ?? 2;
  const reuseConcurrency = options.reuseConcurrency ?? 16;
  const protocol = options.protocol ? { protocol: options.protocol } : {};
  const figures: Array<Record<string, unknown>> = [];
  const suffix = (concurrency: number) => (concurrency === 2 ? '' : `.c${concurrency}`);
  for (const language of options.languages ?? (['python', 'javascript'] as const)) {
    const pooled = new ProcessCodeRunner({ poolSize, ...protocol });
    const unpooled = new ProcessCodeRunner({ poolSize: 0, ...protocol });
    try {
      await pooled.warmUp(language, MEMORY_MB);
      const fresh = await latencies(samples, () => pooled.warmUp(language, MEMORY_MB), () => pooled.runOperator(noop(language, false)));
      // The first on-demand run also starts the fork server: not what this figure is about.
      await unpooled.runOperator(noop(language, false));
      const cold = await latencies(Math.ceil(samples / 3), async () => {}, () => unpooled.runOperator(noop(language, false)));
      await pooled.runOperator(noop(language, true));
      const reused = await latencies(samples * 5, async () => {}, () => pooled.runOperator(noop(language, true)));
      const base = { unit: 'ms', language };
      figures.push(
        { figure: `coderunner.${language}.noop.fresh.latency`, ...base, ...stats(fresh), note: `fresh process per run, pool of ${poolSize} warm before each run` },
        {
          figure: `coderunner.${language}.noop.cold.latency`,
          ...base,
          ...stats(cold),
          note: language === 'python' ? 'no pool: the run forks its process from the fork server' : 'no pool: the run starts its interpreter',
        },
        { figure: `coderunner.${language}.noop.reuse.latency`, ...base, ...stats(reused), note: 'reuse: one process serves consecutive runs' },
      );
      for (const concurrency of levels) {
        await pooled.cleanedUp();
        await pooled.warmUp(language, MEMORY_MB);
        const rate = await throughput(seconds, concurrency, () => pooled.runOperator(noop(language, false)));
        figures.push(rateFigure(`coderunner.${language}.noop.fresh.throughput${suffix(concurrency)}`, language, rate, concurrency, seconds, `fresh process per run, pool of ${poolSize} refilled in the background`));
      }
      await pooled.cleanedUp();
      const reuseRate = await throughput(seconds, levels[0] ?? 2, () => pooled.runOperator(noop(language, true)));
      figures.push(rateFigure(`coderunner.${language}.noop.reuse.throughput${suffix(levels[0] ?? 2)}`, language, reuseRate, levels[0] ?? 2, seconds, 'reuse'));
    } finally {
      await Promise.all([pooled.close(), unpooled.close()]);
    }
    // As the service runs reuse operators: an idle reuse process kept per worker slot.
    const slots = new ProcessCodeRunner({ poolSize, maxIdleReusable: reuseConcurrency, ...protocol });
    try {
      await slots.warmUp(language, MEMORY_MB);
      for (const [name, code, note] of [
        ['noop', NOOP, 'reuse, run only'],
        ['noop_polled', NOOP_POLLED, 'reuse, run then check_completion (success)'],
      ] as const) {
        await slots.cleanedUp();
        // One pass to start the processes the slots keep, then the measured one.
        await throughput(Math.min(1, seconds), reuseConcurrency, () => slots.runOperator(noop(language, true, code)));
        const rate = await throughput(seconds, reuseConcurrency, () => slots.runOperator(noop(language, true, code)));
        figures.push(rateFigure(`coderunner.${language}.${name}.reuse.throughput${suffix(reuseConcurrency)}`, language, rate, reuseConcurrency, seconds, `${note}, maxIdleReusable ${reuseConcurrency}`));
      }
    } finally {
      await slots.close();
    }
    if (language === 'python' && options.pythonSpawn !== false) {
      const spawned = new ProcessCodeRunner({ poolSize, pythonForkServer: false, ...protocol });
      try {
        for (const concurrency of levels) {
          await spawned.cleanedUp();
          await spawned.warmUp(language, MEMORY_MB);
          const rate = await throughput(seconds, concurrency, () => spawned.runOperator(noop(language, false)));
          figures.push(rateFigure(`coderunner.python.noop.spawn.throughput${suffix(concurrency)}`, language, rate, concurrency, seconds, `fork server off: python3 spawned per process, pool of ${poolSize}`));
        }
      } finally {
        await spawned.close();
      }
    }
  }
  return figures;
}

function rateFigure(figure: string, language: Language, rate: Rate, concurrency: number, seconds: number, note: string): Record<string, unknown> {
  const latency = stats(rate.latencies);
  return {
    figure,
    value: round1(rate.rate),
    unit: 'runs/s',
    language,
    runs: rate.runs,
    failures: rate.failures,
    concurrency,
    seconds,
    latencyP50: latency.p50,
    latencyP99: latency.p99,
    note,
  };
}

export function noop(language: Language, reuse: boolean, code: Record<Language, string> = NOOP): OperatorRunRequest {
  return {
    codeblock: { language, code: code[language] },
    connection: {},
    payload: {},
    context: {},
    limits: { timeoutMs: 10_000, memoryMb: MEMORY_MB, maxOutputBytes: 64 * 1024 },
    pollIntervalMs: 50,
    checkCompletionTimeoutMs: 10_000,
    isCancelled: async () => false,
    reuse,
    // Reuse runs need a scope: one operator of one user, as a task's reuse operator runs.
    ...(reuse ? { reuseScope: { itemLaui: 'bench-operator', actorLaui: 'bench-user' } } : {}),
  };
}

export async function latencies(count: number, before: () => Promise<void>, run: () => Promise<{ status: string }>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    await before();
    const started = performance.now();
    const outcome = await run();
    out.push(performance.now() - started);
    if (outcome.status !== 'success') throw new Error(`bench run failed: ${JSON.stringify(outcome)}`);
  }
  return out;
}

export interface Rate {
  rate: number;
  runs: number;
  failures: number;
  /** Milliseconds of each run, from the call to its outcome. */
  latencies: number[];
}

export async function throughput(seconds: number, concurrency: number, run: () => Promise<{ status: string }>): Promise<Rate> {
  const until = performance.now() + seconds * 1000;
  let runs = 0;
  let failures = 0;
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const begun = performance.now();
        const outcome = await run();
        latencies.push(performance.now() - begun);
        if (outcome.status === 'success') runs += 1;
        else failures += 1;
      }
    }),
  );
  return { rate: runs / ((performance.now() - started) / 1000), runs, failures, latencies };
}

export function stats(values: number[]): { p50: number; p99: number; mean: number; samples: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? 0;
  const mean = values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length);
  return { p50: round1(at(0.5)), p99: round1(at(0.99)), mean: round1(mean), samples: values.length };
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
