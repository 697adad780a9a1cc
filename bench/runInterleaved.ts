import { performance } from 'node:perf_hooks';
import { runLoad, type LoadResult, type LoadSpec } from './loadGenerator.ts';
import { readProcStat } from './machineCpu.ts';

/**
 * CPU time of this process's main thread (the servers' event loop; the load generator runs on a
 * worker thread), in ms, from Linux's per-thread accounting; NaN elsewhere. Unlike throughput,
 * CPU per request hardly moves when other processes compete for the cores.
 */
export const mainThreadCpuMs = (): number => readProcStat(`/proc/self/task/${process.pid}/stat`)?.ownMs ?? NaN;

/** One side's figures over all its measured rounds. */
export interface InterleavedFigures extends Omit<LoadResult, 'latencies'> {
  /** Per round, in order: shows the drift the interleaving averages out. */
  rounds: number[];
  main_thread: { cpu_ms_per_req: number; busy_ms_per_req: number; loop_utilization: number };
}

export interface InterleavedRun {
  /** The load of round `round` (-1: the warm-up); a create names its items per round so they never collide. */
  baseline: (round: number) => Omit<LoadSpec, 'seconds'>;
  subject: (round: number) => Omit<LoadSpec, 'seconds'>;
  /** Measured seconds per side, split evenly over the rounds. */
  seconds: number;
  rounds: number;
  /** Unmeasured load per side first: the JIT compiles the hot paths of both before anything counts. */
  warmupSeconds: number;
}

const round3 = (value: number): number => Math.round(value * 1000) / 1000;

/**
 * A subject and its baseline measured alternately, in rounds ordered ABBA (baseline first in even
 * rounds, subject first in odd ones), after a warm-up of each. This machine's speed drifts by tens of
 * percent within minutes; one window each, back to back, put that drift straight into the ratio, and
 * the subject's first second (code not yet optimised) into its figure only.
 */
export async function runInterleaved(
  run: InterleavedRun,
  load: (spec: LoadSpec) => Promise<LoadResult> = runLoad,
): Promise<{ baseline: InterleavedFigures; subject: InterleavedFigures }> {
  const seconds = run.seconds / run.rounds;
  await load({ ...run.baseline(-1), seconds: run.warmupSeconds });
  await load({ ...run.subject(-1), seconds: run.warmupSeconds });
  const sides = { baseline: new Side(load), subject: new Side(load) };
  for (let round = 0; round < run.rounds; round += 1) {
    const order = round % 2 === 0 ? (['baseline', 'subject'] as const) : (['subject', 'baseline'] as const);
    for (const side of order) await sides[side].measure({ ...run[side](round), seconds, keepLatencies: true });
  }
  return { baseline: sides.baseline.figures(), subject: sides.subject.figures() };
}

class Side {
  private readonly latencies: Float64Array[] = [];
  private readonly rounds: number[] = [];
  private requests = 0;
  private errors = 0;
  private seconds = 0;
  private cpuMs = 0;
  private activeMs = 0;
  private idleMs = 0;

  constructor(private readonly load: (spec: LoadSpec) => Promise<LoadResult>) {}

  async measure(spec: LoadSpec): Promise<void> {
    const cpuBefore = mainThreadCpuMs();
    const eluBefore = performance.eventLoopUtilization();
    const result = await this.load(spec);
    const elu = performance.eventLoopUtilization(eluBefore);
    this.cpuMs += mainThreadCpuMs() - cpuBefore;
    this.activeMs += elu.active;
    this.idleMs += elu.idle;
    this.requests += result.requests;
    this.errors += result.errors;
    this.seconds += result.seconds;
    this.rounds.push(result.perSecond);
    if (result.latencies) this.latencies.push(result.latencies);
  }

  figures(): InterleavedFigures {
    const all = new Float64Array(this.latencies.reduce((sum, round) => sum + round.length, 0));
    let at = 0;
    for (const round of this.latencies) {
      all.set(round, at);
      at += round.length;
    }
    all.sort();
    const percentile = (p: number): number => Number((all[Math.min(all.length - 1, Math.floor(p * all.length))] ?? NaN).toFixed(2));
    return {
      requests: this.requests,
      errors: this.errors,
      seconds: round3(this.seconds),
      perSecond: Math.round(this.requests / this.seconds),
      p50: percentile(0.5),
      p99: percentile(0.99),
      rounds: this.rounds,
      main_thread: {
        cpu_ms_per_req: round3(this.cpuMs / this.requests),
        busy_ms_per_req: round3(this.activeMs / this.requests),
        loop_utilization: round3(this.activeMs / (this.activeMs + this.idleMs)),
      },
    };
  }
}
