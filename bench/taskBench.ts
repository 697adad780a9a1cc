import { mkdtempSync, rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import type { ItemDoc } from '../shared/read-models/ItemDoc.ts';
import type { Collection } from '../shared/read-store/ReadStore.ts';
import { loadConfig } from '../ops/config.ts';
import { startService } from '../ops/service.ts';
import { loginToken } from './catalogBench.ts';
import { lowLoadLatency } from './latencyFigures.ts';
import { runLoad } from './loadGenerator.ts';
import { mainThreadCpuMs } from './runInterleaved.ts';
import { machineCpuMs } from './machineCpu.ts';

const TERMINAL = ['success', 'error', 'fail', 'timeout', 'cancelled'];
export const FINISHED = ['success', 'error', 'fail', 'timeout'];
export const NOOP = {
  javascript: 'export function run() { return null; }\nexport function check_completion() { return { status: "success" }; }\n',
  python: 'def run(connection, payload, context):\n    return None\n\ndef check_completion(connection, payload, context):\n    return {"status": "success"}\n',
};

/**
 * No-op operators end to end (POST /task/run until the task reads `success`): latency at low load
 * for JavaScript and Python, sustained throughput with a fresh process per run and with reuse, and
 * the share of each pipeline step from the task's own history.
 */
export async function benchTasks(opts: { dir: string; seconds?: number }): Promise<Array<Record<string, unknown>>> {
  const seconds = opts.seconds ?? 20;
  const bed = await openBed(opts.dir, {});
  const { service, api, operator, createAndRun } = bed;
  try {
    let counter = 0;
    const runNew = async (operatorLaui: string) => String((await api('/task/run', createAndRun(`t${counter++}`, operatorLaui))).item_laui);
    const until = async (laui: string, iteration: number) => {
      for (;;) {
        const task = await service.readStore.collection('items').peek(laui);
        if (task && task.iteration === iteration && FINISHED.includes(String(task.state))) return String(task.state);
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    };

    const figures: Array<Record<string, unknown>> = [];
    const stepTotals = new Map<string, number>();
    for (const language of ['javascript', 'python'] as const) {
      const op = await operator(language, false, 'latency');
      const laui = await runNew(op);
      await until(laui, 1);
      let round = 1;
      const posted: number[] = [];
      figures.push({
        figure: `task.noop.e2e.${language}`,
        ...(await lowLoadLatency(40, 25, async () => {
          round += 1;
          posted.push(Date.now());
          await api('/task/run', { item_laui: laui });
          await until(laui, round);
        })),
      });
      // Each run's steps from its state transitions; a run starts at its POST (the history cannot
      // tell, and the pause between runs must not count as a step).
      const history = (await api(`/catalog/get/item_history?item_laui=${laui}`)) as unknown as Array<{ at: string; changes?: { state?: string } }>;
      let previous: { state: string; at: number } | null = null;
      for (const entry of history) {
        const state = entry.changes?.state;
        if (!state) continue;
        const at = Date.parse(entry.at);
        const fromPost = previous === null || TERMINAL.includes(previous.state);
        const since = fromPost ? posted.filter((time) => time <= at + 1).at(-1) : previous?.at;
        if (since !== undefined && (!fromPost || previous === null || since >= previous.at)) {
          const step = fromPost ? 'request_to_queued' : `to_${state}`;
          stepTotals.set(step, (stepTotals.get(step) ?? 0) + Math.max(0, at - since));
        }
        previous = { state, at };
      }
    }
    const total = [...stepTotals.values()].reduce((sum, value) => sum + value, 0);
    figures.push({
      figure: 'task.pipeline.step_share',
      unit: '% of time between recorded transitions',
      shares: Object.fromEntries([...stepTotals].map(([step, ms]) => [step, Number(((100 * ms) / Math.max(total, 1)).toFixed(1))])),
      note: 'request_to_queued: POST, validation, enqueue, lease and templating (queued_for_connection and queued_in_redis share one commit); to_running: bus and worker pick-up; to_success: operator process and the terminal commit',
    });

    const modes = [
      ['python', false, 'create'],
      ['javascript', false, 'create'],
      ['python', true, 'create'],
      ['javascript', true, 'create'],
      ['python', true, 'batch'],
      ['javascript', true, 'batch'],
    ] as const;
    for (const [language, reuse, mode] of modes) {
      const op = await operator(language, reuse, `throughput-${mode}`);
      const load = await bed.throughput(op, `${language}-${reuse ? 'reuse' : 'fresh'}-${mode}`, seconds, mode);
      const rate = load.tasks / load.seconds;
      const perTask = (ms: number) => Number((ms / Math.max(load.tasks, 1)).toFixed(2));
      figures.push({
        figure: `task.noop.throughput.${reuse ? 'reuse' : 'fresh_process'}${mode === 'batch' ? '.batch' : ''}.${language}`,
        value: Number(rate.toFixed(1)),
        unit: 'tasks/s',
        seconds,
        submission:
          mode === 'create'
            ? '16 clients, one POST /task/run creating and running a new task per request'
            : '4 clients, one POST /task/multiple_tasks running 16 existing tasks per request',
        errors: load.errors,
        // Per request: one task, or a batch of 16.
        p50_ms: load.p50,
        p99_ms: load.p99,
        // Where the rate stops: the service's event loop (one thread) or the machine's cores.
        main_thread_cpu_ms_per_task: perTask(load.mainThreadCpuMs),
        main_loop_utilization: Number(load.loopUtilization.toFixed(3)),
        machine_cpu_ms_per_task: perTask(load.machineCpuMs),
        target: reuse ? '>= 1000 tasks/s' : '>= 100 tasks/s',
        pass: rate >= (reuse ? 1000 : 100) && load.errors === 0,
      });
    }
    figures.push(await freshJavaScriptBaseline(opts.dir, seconds));
    return figures;
  } finally {
    await bed.close();
  }
}

/**
 * The same-run baseline of the fresh-process JavaScript figure: node started for each process
 * (WORKER_NODE_FORK=false) instead of forked from the node fork server.
 */
async function freshJavaScriptBaseline(dir: string, seconds: number): Promise<Record<string, unknown>> {
  const bed = await openBed(dir, { WORKER_NODE_FORK: 'false' });
  try {
    const load = await bed.throughput(await bed.operator('javascript', false, 'baseline'), 'baseline', seconds);
    return {
      figure: 'task.noop.throughput.fresh_process.javascript.baseline_node_start',
      value: Number((load.tasks / load.seconds).toFixed(1)),
      unit: 'tasks/s',
      seconds,
      errors: load.errors,
      note: 'baseline: WORKER_NODE_FORK=false, node started (exec) for each process instead of forked from the node fork server',
    };
  } finally {
    await bed.close();
  }
}

/** A service on its own data directory with a workflow folder and a connection, logged in. */
export async function openBed(dir: string, env: Record<string, string>) {
  const dataDir = mkdtempSync(join(dir, 'tasks-'));
  const service = await startService(
    loadConfig({ PORT: '0', DATA_DIR: dataDir, ADMIN_PASSWORD: 'bench-password-1', WORKER_CONCURRENCY: '64', WORKER_POOL_SIZE: '4', WORKER_POLL_INTERVAL_MS: '20', SQLITE_SYNCHRONOUS: process.env.SYNC ?? 'full', ...env }),
    { announce: () => undefined },
  );
  const token = await loginToken(service, 'bench-password-1');
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const api = async (path: string, body?: unknown) => {
    const response = await fetch(`${service.url}/api/v1${path}`, body === undefined ? { headers } : { method: 'POST', headers, body: JSON.stringify(body) });
    const json = (await response.json()) as Record<string, unknown>;
    if (response.status !== 200) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  };
  const tree = (await api('/catalog/bootstrap', { account_name: 'bench' })) as { account_laui: string; project_laui: string; folders: Record<string, string> };
  const workflow = String((await api('/catalog/create', { item_type: 'folder.workflow', name: 'wf', parent_laui: tree.folders.workflow })).item_laui);
  const connection = String((await api('/catalog/create', { item_type: 'connection', name: 'c', parent_laui: tree.folders.connection, content: {}, max_parallelism: Number(env.WORKER_CONCURRENCY ?? 64) })).item_laui);
  const operator = async (language: 'javascript' | 'python', reuse: boolean, phase: string) =>
    String(
      (await api('/catalog/create', { item_type: 'operator', name: `${language}-${phase}${reuse ? '-reuse' : ''}.operator`, parent_laui: tree.folders.operator, codeblock: { language, code: NOOP[language] }, reuse_process: reuse })).item_laui,
    );
  /** A POST /task/run body that creates a new task of the operator and runs it. */
  const createAndRun = (name: string, operatorLaui: string) => ({ name, parent_laui: workflow, project_laui: tree.project_laui, account_laui: tree.account_laui, operator_laui: operatorLaui, connection_laui: connection });
  /**
   * Throughput: clients on a worker thread (like a remote client, they do not share the service's
   * event loop), each sending its next request once the tasks its last one started have finished;
   * one timer on this thread watches the read model for them.
   * - 'create': 16 clients, each creating and running a new task of the operator (POST /task/run).
   * - 'batch': 4 clients, each running 16 existing tasks of the operator at once (POST
   *   /task/multiple_tasks), 256 tasks in 16 batches, each client cycling through its own four.
   */
  const throughput = async (operatorLaui: string, phase: string, seconds: number, mode: 'create' | 'batch' = 'create') => {
    const watcher = terminalWatcher(service.readStore.collection('items'));
    try {
      const spec =
        mode === 'create'
          ? { url: `${service.url}/api/v1/task/run`, bodyTemplate: JSON.stringify(createAndRun(`${phase}-{{n}}`, operatorLaui)), concurrency: 16, awaitField: 'item_laui' }
          : { url: `${service.url}/api/v1/task/multiple_tasks`, bodies: await batchBodies(operatorLaui, phase), concurrency: 4, awaitField: 'task_results' };
      const [cpu, machine, loop] = [mainThreadCpuMs(), machineCpuMs(), performance.eventLoopUtilization()];
      const load = await runLoad({ ...spec, method: 'POST', headers, seconds }, watcher.until);
      return {
        ...load,
        tasks: load.completed ?? load.requests,
        mainThreadCpuMs: mainThreadCpuMs() - cpu,
        machineCpuMs: machineCpuMs() - machine,
        loopUtilization: performance.eventLoopUtilization(loop).utilization,
      };
    } finally {
      watcher.stop();
    }
  };
  /** 256 tasks of the operator, created (not run), as 16 multiple_tasks bodies of 16 (the load generator deals them out to its clients). */
  const batchBodies = async (operatorLaui: string, phase: string): Promise<string[]> => {
    const lauis: string[] = [];
    for (let index = 0; index < 256; index += 1) {
      lauis.push(String((await api('/catalog/create', { item_type: 'task', ...createAndRun(`${phase}-batch-${index}`, operatorLaui) })).item_laui));
    }
    return Array.from({ length: 16 }, (_, batch) => JSON.stringify({ task_lauis: lauis.slice(batch * 16, batch * 16 + 16) }));
  };
  return {
    service,
    dataDir,
    api,
    tree,
    operator,
    createAndRun,
    throughput,
    close: async () => {
      await service.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** CPU time of the whole machine (every core, every process), in ms, from /proc/stat; NaN elsewhere. */

/**
 * Resolves each wait for a task once it reads terminal at its next iteration (the first wait for a
 * task: iteration 1; a task run again is waited for at 2, ...); one 2 ms timer for all of them.
 */
export const terminalWatcher = (items: Collection<ItemDoc>) => {
  const pending = new Map<string, { iteration: number; resolve: () => void }>();
  const waited = new Map<string, number>();
  let checking = false;
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    void (async () => {
      for (const [laui, wait] of [...pending]) {
        const task = await items.peek(laui);
        if (task && Number(task.iteration) >= wait.iteration && FINISHED.includes(String(task.state))) {
          pending.delete(laui);
          wait.resolve();
        }
      }
    })().finally(() => (checking = false));
  }, 2);
  return {
    until: (laui: string) =>
      new Promise<void>((resolve) => {
        const iteration = (waited.get(laui) ?? 0) + 1;
        waited.set(laui, iteration);
        pending.set(laui, { iteration, resolve });
      }),
    stop: () => clearInterval(timer),
  };
};
