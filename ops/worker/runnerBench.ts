import { performance } from 'node:perf_hooks';
import type { Language, OperatorRunRequest } from '../../shared/ports/CodeRunner.ts';
import { ProcessCodeRunner } from './ProcessCodeRunner.ts';

const MEMORY_MB = 128;
const NOOP: Record<Language, string> = {
  python: 'def run(connection, payload, context):\n    return {"ok": True}\n',
  javascript: 'export function run(connection, payload, context) { return { ok: true }; }\n',
};

export interface RunnerBenchOptions {
  /** Latency samples per mode (reuse takes 5x as many: they are cheap). Default 60. */
  samples?: number;
  /** Seconds of each throughput measurement. Default 3. */
  seconds?: number;
  /** Runs in flight during throughput measurements. Default 2 (the CI machine's cores). */
  concurrency?: number;
  /** Warm processes per pool. Default 2. */
  poolSize?: number;
  languages?: Language[];
}

/**
 * No-op operator (run only, no check_completion, no finish) through ProcessCodeRunner, per language:
 * - latency with a fresh process per run, the pool refilled before each run (the warm path);
 * - latency with no pool (every run starts its interpreter: what the pool saves);
 * - latency with reuse (one process serves consecutive runs);
 * - throughput over `seconds`, fresh processes and reuse, `concurrency` runs in flight.
 */
export async function benchRunner(options: RunnerBenchOptions = {}): Promise<Array<Record<string, unknown>>> {
  const samples = options.samples ?? 60;
  const seconds = options.seconds ?? 3;
  const concurrency = options.concurrency ?? 2;
  const poolSize = options.poolSize ?? 2;
  const figures: Array<Record<string, unknown>> = [];
  for (const language of options.languages ?? (['python', 'javascript'] as const)) {
    const pooled = new ProcessCodeRunner({ poolSize });
    const unpooled = new ProcessCodeRunner({ poolSize: 0 });
    try {
      await pooled.warmUp(language, MEMORY_MB);
      const fresh = await latencies(samples, () => pooled.warmUp(language, MEMORY_MB), () => pooled.runOperator(noop(language, false)));
      const cold = await latencies(Math.ceil(samples / 3), async () => {}, () => unpooled.runOperator(noop(language, false)));
      await pooled.runOperator(noop(language, true));
      const reused = await latencies(samples * 5, async () => {}, () => pooled.runOperator(noop(language, true)));
      await pooled.warmUp(language, MEMORY_MB);
      const freshRate = await throughput(seconds, concurrency, () => pooled.runOperator(noop(language, false)));
      const reuseRate = await throughput(seconds, concurrency, () => pooled.runOperator(noop(language, true)));
      const base = { unit: 'ms', language };
      figures.push(
        { figure: `coderunner.${language}.noop.fresh.latency`, ...base, ...stats(fresh), note: `fresh process per run, pool of ${poolSize} warm before each run` },
        { figure: `coderunner.${language}.noop.cold.latency`, ...base, ...stats(cold), note: 'no pool: the run starts its interpreter' },
        { figure: `coderunner.${language}.noop.reuse.latency`, ...base, ...stats(reused), note: 'reuse: one process serves consecutive runs' },
        {
          figure: `coderunner.${language}.noop.fresh.throughput`,
          value: round1(freshRate.rate),
          unit: 'runs/s',
          language,
          runs: freshRate.runs,
          failures: freshRate.failures,
          concurrency,
          seconds,
          note: `fresh process per run, pool of ${poolSize} refilled in the background`,
        },
        {
          figure: `coderunner.${language}.noop.reuse.throughput`,
          value: round1(reuseRate.rate),
          unit: 'runs/s',
          language,
          runs: reuseRate.runs,
          failures: reuseRate.failures,
          concurrency,
          seconds,
          note: 'reuse',
        },
      );
    } finally {
      await Promise.all([pooled.close(), unpooled.close()]);
    }
  }
  return figures;
}

function noop(language: Language, reuse: boolean): OperatorRunRequest {
  return {
    codeblock: { language, code: NOOP[language] },
    connection: {},
    payload: {},
    context: {},
    limits: { timeoutMs: 10_000, memoryMb: MEMORY_MB, maxOutputBytes: 64 * 1024 },
    pollIntervalMs: 50,
    checkCompletionTimeoutMs: 10_000,
    isCancelled: async () => false,
    reuse,
  };
}

async function latencies(count: number, before: () => Promise<void>, run: () => Promise<{ status: string }>): Promise<number[]> {
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

async function throughput(seconds: number, concurrency: number, run: () => Promise<{ status: string }>): Promise<{ rate: number; runs: number; failures: number }> {
  const until = performance.now() + seconds * 1000;
  let runs = 0;
  let failures = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const outcome = await run();
        if (outcome.status === 'success') runs += 1;
        else failures += 1;
      }
    }),
  );
  return { rate: runs / ((performance.now() - started) / 1000), runs, failures };
}

function stats(values: number[]): { p50: number; p99: number; mean: number; samples: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? 0;
  const mean = values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length);
  return { p50: round1(at(0.5)), p99: round1(at(0.99)), mean: round1(mean), samples: values.length };
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
