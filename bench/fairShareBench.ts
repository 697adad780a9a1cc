import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import type { SlotPolicy } from '../shared/task/SlotWait.ts';
import { loadConfig } from '../ops/config.ts';
import { startService } from '../ops/service.ts';
import { loginToken } from './catalogBench.ts';

const sleeper = (ms: number) => `export async function run() { await new Promise((resolve) => setTimeout(resolve, ${ms})); return null; }\n`;

export interface FairShareOptions {
  dir: string;
  /** Runs of the first project's backlog. Default 10. */
  backlog?: number;
  /** Length of each backlog run. Default 1.6 s (the 8 s scaled by 0.2). */
  longMs?: number;
  /** Length of the other project's run. Default 0.2 s (the 1 s scaled by 0.2). */
  shortMs?: number;
}

/**
 * Fair share of worker slots (WorkerSlots): one project's backlog of `backlog` long runs on 2
 * worker slots, then another project's short run. Its wait (dispatch to pick-up) with the
 * service's fair share, beside the first-come-first-served baseline measured in the same run (the
 * `fifo` policy, selectable for the bench only). Fair share bounds it by one slot turnover (one
 * long run); FIFO makes it wait for the whole backlog (backlog / 2 turnovers).
 */
export async function benchFairShare(opts: FairShareOptions): Promise<Array<Record<string, unknown>>> {
  const backlog = opts.backlog ?? 10;
  const longMs = opts.longMs ?? 1600;
  const shortMs = opts.shortMs ?? 200;
  const waits: Record<SlotPolicy, { waitS: number; doneS: number }> = { fifo: await otherProjectWait(opts.dir, 'fifo', backlog, longMs, shortMs), fair: await otherProjectWait(opts.dir, 'fair', backlog, longMs, shortMs) };
  const shape = { slots: 2, backlog_runs: backlog, backlog_run_s: longMs / 1000, other_run_s: shortMs / 1000 };
  return [
    {
      figure: 'worker.fair_share.other_project_wait',
      value: waits.fair.waitS,
      unit: 's',
      baseline_fifo: waits.fifo.waitS,
      ...shape,
      bound: `fair: at most one slot turnover (${longMs / 1000} s); fifo: the whole backlog (${(backlog / 2) * (longMs / 1000)} s)`,
      note: 'POST /task/run sent to pick-up (task_instance_start_date) of the other project\'s run',
    },
    {
      figure: 'worker.fair_share.other_project_done',
      value: waits.fair.doneS,
      unit: 's',
      baseline_fifo: waits.fifo.doneS,
      ...shape,
      note: 'POST /task/run sent to success of the other project\'s run',
    },
  ];
}

/** One service with `policy`: the first project's backlog, then the other project's run; its wait and its time to success. */
async function otherProjectWait(dir: string, policy: SlotPolicy, backlog: number, longMs: number, shortMs: number): Promise<{ waitS: number; doneS: number }> {
  const service = await startService(
    loadConfig({ PORT: '0', DATA_DIR: mkdtempSync(join(dir, `fair-${policy}-`)), ADMIN_PASSWORD: 'bench-password-1', WORKER_CONCURRENCY: '2', WORKER_POLL_INTERVAL_MS: '20', SQLITE_SYNCHRONOUS: 'normal' }),
    { announce: () => undefined, slotPolicy: policy },
  );
  try {
    const token = await loginToken(service, 'bench-password-1');
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const api = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
      const response = await fetch(`${service.url}/api/v1${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      const json = (await response.json()) as Record<string, unknown>;
      if (response.status !== 200) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`);
      return json;
    };
    const project = async (name: string, operatorMs: number, maxParallelism: number) => {
      const tree = (await api('/catalog/bootstrap', { account_name: name })) as { account_laui: string; project_laui: string; folders: Record<string, string> };
      const create = async (body: Record<string, unknown>) => String((await api('/catalog/create', body)).item_laui);
      const workflow = await create({ item_type: 'folder.workflow', name: 'wf', parent_laui: tree.folders.workflow });
      const connection = await create({ item_type: 'connection', name: 'c', parent_laui: tree.folders.connection, content: {}, max_parallelism: maxParallelism });
      const operator = await create({ item_type: 'operator', name: 'sleep.operator', parent_laui: tree.folders.operator, codeblock: { language: 'javascript', code: sleeper(operatorMs) } });
      return async (taskName: string) =>
        String((await api('/task/run', { name: taskName, parent_laui: workflow, project_laui: tree.project_laui, account_laui: tree.account_laui, operator_laui: operator, connection_laui: connection })).item_laui);
    };
    const runFirst = await project('first', longMs, backlog);
    const runOther = await project('other', shortMs, 1);
    const items = service.readStore.collection('items');
    const backlogRuns: string[] = [];
    for (let index = 0; index < backlog; index += 1) backlogRuns.push(await runFirst(`long-${index}`));
    const dispatchedAt = Date.now();
    const other = await runOther('short');
    let startedAt: number | null = null;
    for (;;) {
      const task = await items.peek(other);
      if (startedAt === null && typeof task?.task_instance_start_date === 'string' && task.state !== 'queued_in_redis') startedAt = Date.parse(task.task_instance_start_date);
      if (task?.state === 'success' && startedAt !== null) break;
      if (task && ['error', 'fail', 'timeout', 'cancelled'].includes(String(task.state))) throw new Error(`the other project's run ended ${String(task.state)}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const doneAt = Date.now();
    // The backlog ends before the service closes (close waits for running runs).
    for (const laui of backlogRuns) {
      while (!['success', 'error', 'fail', 'timeout', 'cancelled'].includes(String((await items.peek(laui))?.state))) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seconds = (ms: number) => Number((ms / 1000).toFixed(2));
    return { waitS: seconds(Math.max(0, startedAt - dispatchedAt)), doneS: seconds(doneAt - dispatchedAt) };
  } finally {
    await service.close();
  }
}
