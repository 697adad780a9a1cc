import type { Language } from '../shared/ports/CodeRunner.ts';
import { ProcessCodeRunner } from '../ops/worker/ProcessCodeRunner.ts';
import { latencies, MEMORY_MB, noop, stats, throughput } from '../ops/worker/runnerBench.ts';
import { lowLoadLatency } from './latencyFigures.ts';
import { readProcStat } from './machineCpu.ts';
import { FINISHED, openBed } from './taskBench.ts';

type Figures = Record<string, number>;
type Samples<Side extends string> = Record<Side, Figures[]>;

/**
 * The service's sides: `none` runs code as the service's own user without a cgroup per run
 * (WORKER_SANDBOX=none, CODERUN_CGROUPS=off: as before issue 19); `uid` is issue 19's sandbox (a
 * uid per run process, a memory cgroup per run, parent-death signals) without issue 31's
 * (CODERUN_ISOLATION=off); `isolated` is the default as root: `uid` plus namespaces, a root and
 * process/CPU cgroups of its own for every run process (native/sandbox.c).
 */
type ServiceSide = 'none' | 'uid' | 'isolated';
type RunnerSide = 'uid' | 'isolated';

const LANGUAGES: Language[] = ['javascript', 'python'];
/** The runner-level sides' run identities: a range apart from the service's default 64000-64999. */
const RUN_AS = { uid: 62_000, gid: 62_000, count: 64 };

const NONE_NOTE = 'same run, same build, WORKER_SANDBOX=none and CODERUN_CGROUPS=off (code runs as the service user without a cgroup per run, as before issue 19)';
const UID_NOTE = 'same run, same build, CODERUN_ISOLATION=off (a uid and a memory cgroup per run process, no namespaces, root or pids/cpu cgroups of its own: as before issue 31)';
const RUNNER_NOTE = 'same run, same build, ProcessCodeRunner with runAs a range and sandbox: false (a uid and a memory cgroup per run process, no namespaces, root or pids/cpu cgroups of its own)';

/**
 * What the run sandboxes cost, each against its same-run baseline, the sides alternated in ABBA
 * rounds (ABCCBA for three) so that a machine that drifts (another process, thermal) weighs on all
 * alike; each figure is the median of its side's rounds.
 * - `sandbox.*` (issue 19: at most 10%): the `uid` service against `none`, no-op task end-to-end
 *   p50 and fresh-process throughput.
 * - `isolation.*` (issue 31: end-to-end p50 and reuse at most 15%, fresh process at most 25%): the
 *   `isolated` service against `uid` (the same figures), and ProcessCodeRunner directly (no HTTP,
 *   no event store) with runAs a range, the default sandbox against `sandbox: false`: fresh-process
 *   and reuse runs/s at concurrency 2, reuse p50 latency, and CPU per run (this process plus the
 *   fork servers and the run processes they reaped; kernel work done in kworkers, such as namespace
 *   teardown, is not counted).
 */
export async function benchSandbox(opts: { dir: string; seconds?: number; rounds?: number; runnerSeconds?: number }): Promise<Array<Record<string, unknown>>> {
  const seconds = opts.seconds ?? 5;
  const rounds = opts.rounds ?? 2;
  const runnerSeconds = opts.runnerSeconds ?? 3;
  // Not root, the service runs code in bubblewrap (or as itself) and the runner cannot switch uids.
  if (process.getuid?.() !== 0) return [{ figure: 'sandbox', skipped: 'the run sandboxes are those of a service running as root: run the sandbox bench as root' }];
  const service = await alternate<ServiceSide>(['none', 'uid', 'isolated'], rounds, (side) => measureService(opts.dir, side, seconds));
  const runner = await alternate<RunnerSide>(['uid', 'isolated'], rounds, (side) => measureRunner(side, runnerSeconds));
  const serviceFigure = (key: string, unit: string, higherIsBetter: boolean) => ({
    issue19: compare(service, 'uid', 'none', { name: `sandbox.${key}`, key, unit, higherIsBetter, note: NONE_NOTE, limit: 0.1 }),
    issue31: compare(service, 'isolated', 'uid', { name: `isolation.service.${key}`, key, unit, higherIsBetter, note: UID_NOTE, limit: key.includes('fresh_process') ? 0.25 : 0.15 }),
  });
  const serviceFigures = [
    serviceFigure('noop.e2e_p50.javascript', 'ms', false),
    serviceFigure('noop.e2e_p50.python', 'ms', false),
    serviceFigure('noop.throughput.fresh_process.javascript', 'tasks/s', true),
    serviceFigure('noop.throughput.fresh_process.python', 'tasks/s', true),
  ];
  const runnerFigure = (key: string, unit: string, higherIsBetter: boolean, limit: number | null) =>
    compare(runner, 'isolated', 'uid', { name: `isolation.runner.${key}`, key, unit, higherIsBetter, note: RUNNER_NOTE, limit, concurrency: 2, seconds: runnerSeconds });
  return [
    ...serviceFigures.map((figure) => figure.issue19),
    ...serviceFigures.map((figure) => figure.issue31),
    ...LANGUAGES.flatMap((language) => [
      runnerFigure(`fresh.runs_per_s.${language}`, 'runs/s', true, 0.25),
      runnerFigure(`fresh.cpu_ms_per_run.${language}`, 'ms', false, null),
      runnerFigure(`reuse.runs_per_s.${language}`, 'runs/s', true, 0.15),
      runnerFigure(`reuse.p50.${language}`, 'ms', false, 0.15),
      runnerFigure(`reuse.cpu_ms_per_run.${language}`, 'ms', false, null),
    ]),
    {
      figure: 'isolation.runner.failed_runs',
      unit: 'runs',
      note: 'no-op runs that did not succeed during the runner-level windows, per side and round (should be 0)',
      ...Object.fromEntries(LANGUAGES.map((language) => [language, { isolated: runner.isolated.map((each) => each[`failures.${language}`]), uid: runner.uid.map((each) => each[`failures.${language}`]) }])),
    },
  ];
}

/** Each side measured once per round, in ABBA order: the sides' order in even rounds, reversed in odd ones. */
async function alternate<Side extends string>(sides: Side[], rounds: number, measure: (side: Side) => Promise<Figures>): Promise<Samples<Side>> {
  const samples = Object.fromEntries(sides.map((side) => [side, [] as Figures[]])) as Samples<Side>;
  for (let round = 0; round < rounds; round += 1) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) samples[side].push(await measure(side));
  }
  return samples;
}

function median(figures: Figures[], key: string): number {
  const values = figures.map((each) => each[key] ?? NaN).sort((a, b) => a - b);
  const middle = values.length / 2;
  return Number((values.length % 2 ? (values[Math.floor(middle)] ?? NaN) : ((values[middle - 1] ?? NaN) + (values[middle] ?? NaN)) / 2).toFixed(2));
}

/** One figure: the subject's median, its baseline's, their ratio and the cost against the target (null: no target, reported only). */
function compare<Side extends string>(
  samples: Samples<Side>,
  subject: Side,
  baselineSide: Side,
  spec: { name: string; key: string; unit: string; higherIsBetter: boolean; note: string; limit: number | null; concurrency?: number; seconds?: number },
): Record<string, unknown> {
  const value = median(samples[subject], spec.key);
  const baseline = median(samples[baselineSide], spec.key);
  // Cost as a share of the baseline: slower latency, lower throughput or more CPU is a positive cost.
  const cost = spec.higherIsBetter ? (baseline - value) / baseline : (value - baseline) / baseline;
  return {
    figure: spec.name,
    value,
    unit: spec.unit,
    baseline,
    ratio: Number((value / baseline).toFixed(3)),
    baseline_note: spec.note,
    cost_percent: Number((100 * cost).toFixed(1)),
    ...(spec.concurrency ? { concurrency: spec.concurrency } : {}),
    ...(spec.seconds ? { seconds: spec.seconds } : {}),
    rounds: samples[subject].length,
    rounds_values: { [subject]: samples[subject].map((figures) => figures[spec.key]), [baselineSide]: samples[baselineSide].map((figures) => figures[spec.key]) },
    ...(spec.limit === null ? {} : { target: `cost <= ${Math.round(spec.limit * 100)}%`, pass: cost <= spec.limit }),
  };
}

/**
 * Sets `values` in this process's environment for the duration of `body` (undefined: unset): the fork
 * servers read CODERUN_CGROUPS when they start, the runner CODERUN_ISOLATION when it is made.
 */
async function withEnvironment<T>(values: Record<string, string | undefined>, body: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(values).map((name) => [name, process.env[name]]));
  const apply = (entries: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(entries)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  apply(values);
  try {
    return await body();
  } finally {
    apply(saved);
  }
}

async function measureService(dir: string, side: ServiceSide, seconds: number): Promise<Figures> {
  // Each side's bed is closed before the next opens: its runner and fork servers start with its environment.
  const environment = { CODERUN_CGROUPS: side === 'none' ? 'off' : undefined, CODERUN_ISOLATION: side === 'uid' ? 'off' : undefined };
  return withEnvironment(environment, async () => {
    const bed = await openBed(dir, side === 'none' ? { WORKER_SANDBOX: 'none' } : {});
    try {
      const figures: Figures = {};
      for (const language of LANGUAGES) {
        const operator = await bed.operator(language, false, `${side}-latency`);
        const laui = String((await bed.api('/task/run', bed.createAndRun(`${side}-${language}-latency`, operator))).item_laui);
        let iteration = 1;
        await finished(bed, laui, iteration);
        const latency = await lowLoadLatency(30, 25, async () => {
          iteration += 1;
          await bed.api('/task/run', { item_laui: laui });
          await finished(bed, laui, iteration);
        });
        figures[`noop.e2e_p50.${language}`] = Number(latency.p50);
        const load = await bed.throughput(await bed.operator(language, false, `${side}-throughput`), `${side}-${language}`, seconds);
        figures[`noop.throughput.fresh_process.${language}`] = Number((load.tasks / load.seconds).toFixed(1));
      }
      return figures;
    } finally {
      await bed.close();
    }
  });
}

/** ProcessCodeRunner alone, as runnerBench.ts measures it: fresh-process and reuse runs at concurrency 2. */
async function measureRunner(side: RunnerSide, seconds: number): Promise<Figures> {
  // The default sandbox (the option undefined) must not be turned off by a CODERUN_ISOLATION left in the environment.
  const runner = await withEnvironment({ CODERUN_ISOLATION: undefined }, async () =>
    new ProcessCodeRunner({ poolSize: 2, maxIdleReusable: 2, runAs: RUN_AS, ...(side === 'uid' ? { sandbox: false as const } : {}) }),
  );
  try {
    const figures: Figures = {};
    for (const language of LANGUAGES) {
      const fresh = () => runner.runOperator(noop(language, false));
      const reuse = () => runner.runOperator(noop(language, true));
      await runner.warmUp(language, MEMORY_MB);
      // Unmeasured: the fork server's first forks and this process's JIT.
      await throughput(Math.min(1, seconds), 2, fresh);
      await runner.cleanedUp();
      await runner.warmUp(language, MEMORY_MB);
      let cpu = cpuMark(runner);
      const freshRate = await throughput(seconds, 2, fresh);
      figures[`fresh.runs_per_s.${language}`] = Number(freshRate.rate.toFixed(1));
      figures[`fresh.cpu_ms_per_run.${language}`] = Number((cpuSince(runner, cpu) / freshRate.runs).toFixed(2));
      await runner.cleanedUp();
      await reuse();
      figures[`reuse.p50.${language}`] = stats(await latencies(300, async () => {}, reuse)).p50;
      cpu = cpuMark(runner);
      const reuseRate = await throughput(seconds, 2, reuse);
      figures[`reuse.runs_per_s.${language}`] = Number(reuseRate.rate.toFixed(1));
      figures[`reuse.cpu_ms_per_run.${language}`] = Number((cpuSince(runner, cpu) / reuseRate.runs).toFixed(2));
      // Reported rather than thrown: a rare failed start is a finding of its own, not the end of the bench.
      figures[`failures.${language}`] = freshRate.failures + reuseRate.failures;
    }
    return figures;
  } finally {
    await runner.close();
  }
}

/** CPU ms so far of this process and of each fork server, with the run processes it reaped (their supervisors' included). */
function cpuMark(runner: ProcessCodeRunner): { self: number; servers: Map<number, number> } {
  const usage = process.cpuUsage();
  const servers = new Map([...runner.forkServerPids(), ...runner.nodeForkServerPids()].map((pid) => [pid, processTreeCpuMs(pid)]));
  return { self: (usage.user + usage.system) / 1000, servers };
}

function cpuSince(runner: ProcessCodeRunner, mark: ReturnType<typeof cpuMark>): number {
  const now = cpuMark(runner);
  let total = now.self - mark.self;
  for (const [pid, ms] of now.servers) total += ms - (mark.servers.get(pid) ?? 0);
  return total;
}

/** utime + stime + cutime + cstime of a process (its reaped children's included), in ms; 0 when unreadable. */
function processTreeCpuMs(pid: number): number {
  const stat = readProcStat(`/proc/${pid}/stat`);
  return stat === null ? 0 : stat.ownMs + stat.reapedMs;
}

/** Until the task reads a finished state at `iteration` (1 ms polls of the read model). */
async function finished(bed: Awaited<ReturnType<typeof openBed>>, laui: string, iteration: number): Promise<void> {
  for (;;) {
    const task = await bed.service.readStore.collection('items').peek(laui);
    if (task && Number(task.iteration) >= iteration && FINISHED.includes(String(task.state))) {
      if (task.state !== 'success') throw new Error(`bench task ${laui} ended ${String(task.state)}: ${JSON.stringify(task.last_run_output)}`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
