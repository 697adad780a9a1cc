import { lowLoadLatency } from './latencyFigures.ts';
import { FINISHED, openBed } from './taskBench.ts';

type Side = 'sandbox' | 'baseline';
type Figures = Record<string, number>;

/**
 * What the run sandbox costs (issue 19: at most 10% on the no-op task's end-to-end p50 and on
 * fresh-process throughput): the same service build measured with the default sandbox (a uid per
 * run process, a memory cgroup per run, parent-death signals) and with `WORKER_SANDBOX=none`, which
 * runs code as the service's own user as every release before it did, and with the per-run cgroups
 * off (`CODERUN_CGROUPS=off`, read by the fork servers when they start): the same-run baseline.
 * Sides alternate in ABBA rounds so that a machine that drifts (another process, thermal) weighs on
 * both alike; each figure is the median of its side's rounds.
 */
export async function benchSandbox(opts: { dir: string; seconds?: number; rounds?: number }): Promise<Array<Record<string, unknown>>> {
  const seconds = opts.seconds ?? 10;
  const rounds = opts.rounds ?? 2;
  const order: Side[] = [];
  for (let round = 0; round < rounds; round += 1) order.push(...((round % 2 === 0 ? ['baseline', 'sandbox'] : ['sandbox', 'baseline']) as Side[]));
  const samples: Record<Side, Figures[]> = { sandbox: [], baseline: [] };
  for (const side of order) samples[side].push(await measure(opts.dir, side, seconds));

  const median = (side: Side, key: string): number => {
    const values = samples[side].map((figures) => figures[key] ?? NaN).sort((a, b) => a - b);
    const middle = values.length / 2;
    return Number((values.length % 2 ? (values[Math.floor(middle)] ?? NaN) : ((values[middle - 1] ?? NaN) + (values[middle] ?? NaN)) / 2).toFixed(2));
  };
  const figure = (key: string, unit: string, higherIsBetter: boolean) => {
    const value = median('sandbox', key);
    const baseline = median('baseline', key);
    // Cost as a share of the baseline: slower latency or lower throughput is a positive cost.
    const cost = higherIsBetter ? (baseline - value) / baseline : (value - baseline) / baseline;
    return {
      figure: `sandbox.${key}`,
      value,
      unit,
      baseline,
      baseline_note: 'same run, same build, WORKER_SANDBOX=none and CODERUN_CGROUPS=off (code runs as the service user without a cgroup per run, as before issue 19)',
      cost_percent: Number((100 * cost).toFixed(1)),
      rounds,
      rounds_values: { sandbox: samples.sandbox.map((figures) => figures[key]), baseline: samples.baseline.map((figures) => figures[key]) },
      target: 'cost <= 10%',
      pass: cost <= 0.1,
    };
  };
  return [
    figure('noop.e2e_p50.javascript', 'ms', false),
    figure('noop.e2e_p50.python', 'ms', false),
    figure('noop.throughput.fresh_process.javascript', 'tasks/s', true),
    figure('noop.throughput.fresh_process.python', 'tasks/s', true),
  ];
}

async function measure(dir: string, side: Side, seconds: number): Promise<Figures> {
  // The fork servers take CODERUN_CGROUPS from this process's environment when they start (on the
  // bed's first run); each side's bed is closed before the next opens, so it is set per side.
  const cgroups = process.env.CODERUN_CGROUPS;
  if (side === 'baseline') process.env.CODERUN_CGROUPS = 'off';
  else delete process.env.CODERUN_CGROUPS;
  const bed = await openBed(dir, side === 'baseline' ? { WORKER_SANDBOX: 'none' } : {});
  try {
    const figures: Figures = {};
    for (const language of ['javascript', 'python'] as const) {
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
    if (cgroups === undefined) delete process.env.CODERUN_CGROUPS;
    else process.env.CODERUN_CGROUPS = cgroups;
  }
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
