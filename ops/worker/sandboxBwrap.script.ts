/**
 * A service-side process that does not run as root (sandboxBwrap.int.spec.ts starts it as an
 * unprivileged uid): builds the runner as ops/service.ts does in WORKER_SANDBOX=auto (bubblewrap
 * when usable) and runs the hostile code it is given, then reports on stdout, as one JSON line,
 * the decision, each outcome, and whether the detached processes the runs started are gone while
 * this process (the service) still runs.
 * Input (environment): BWRAP_SPEC_DATA_DIR, BWRAP_SPEC_RUNS (JSON: [{language, code, bashblock?, tag}]), WORKER_NETWORK.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Language, OperatorRunRequest } from '../../shared/ports/CodeRunner.ts';
import { LIMITS } from './operatorRequests.ts';
import { nodeForkAddonLoads } from './nodeForkProgram.ts';
import { ProcessCodeRunner } from './ProcessCodeRunner.ts';
import { decideSandbox, probeBwrap } from './sandbox.ts';
import { decideNetwork } from './networkPolicy.ts';
import type { WorkerNetworkMode } from '../config.ts';

interface Run {
  language: Language;
  code: string;
  bashblock?: string;
  /** A distinctive argument of the detached processes the run starts (`sleep <tag>`). */
  tag: string;
  /** The run's time limit; default 30 s. */
  timeoutMs?: number;
}

/** Processes of this host whose command line is `sleep <tag>` (zombies excluded). */
function sleepers(tag: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'latin1') !== `sleep\0${tag}\0`) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z') found.push(Number(name));
    } catch {
      // gone
    }
  }
  return found;
}

async function main(): Promise<void> {
  const dataDir = process.env.BWRAP_SPEC_DATA_DIR ?? '';
  const runs = JSON.parse(process.env.BWRAP_SPEC_RUNS ?? '[]') as Run[];
  const isRoot = process.getuid?.() === 0;
  const decision = decideSandbox({ isRoot, setting: process.env.BWRAP_SPEC_DEBUG === 'none' ? 'none' : 'auto', runAs: null, bwrapUsable: !isRoot && probeBwrap(nodeForkAddonLoads) });
  const runner = new ProcessCodeRunner({
    poolSize: 1,
    // WORKER_NETWORK from the environment (default host here: these specs are about the file system).
    ...(decision.kind === 'bwrap' ? { bwrap: { hidden: [dataDir], unshareNet: decideNetwork({ mode: (process.env.WORKER_NETWORK ?? 'host') as WorkerNetworkMode, sandbox: decision }).kind === 'unshare' } } : {}),
    ...(decision.kind === 'refused' ? { disabled: decision.message } : {}),
  });
  if (process.env.BWRAP_SPEC_HANG && runs[0]) {
    // Killed by the spec once the run is busy and its detached processes are up: nothing of it may stay.
    const run = runs[0];
    void runner.runOperator({
      codeblock: { language: run.language, code: run.code },
      connection: {},
      payload: {},
      context: { dataDir, tag: run.tag },
      limits: { ...LIMITS, timeoutMs: 120_000 },
      pollIntervalMs: 50,
      checkCompletionTimeoutMs: 1000,
      isCancelled: async () => false,
    });
    const deadline = Date.now() + 60_000;
    while (sleepers(run.tag).length < 2) {
      if (Date.now() > deadline) throw new Error('the run did not start its processes within 60 s');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    process.stdout.write(`${JSON.stringify({ running: sleepers(run.tag) })}\n`);
    await new Promise(() => {});
  }
  const results: Array<{ tag: string; outcome: unknown; leftBehind: number[]; startedDuring: number[] }> = [];
  try {
    for (const run of runs) {
      const request: OperatorRunRequest = {
        codeblock: { language: run.language, code: run.code },
        ...(run.bashblock ? { bashblock: { code: run.bashblock } } : {}),
        connection: {},
        payload: {},
        context: { dataDir, tag: run.tag, home: process.env.HOME ?? '/nonexistent', repo: dirname(fileURLToPath(new URL('../../package.json', import.meta.url))) },
        limits: { ...LIMITS, timeoutMs: run.timeoutMs ?? 30_000 },
        pollIntervalMs: 50,
        checkCompletionTimeoutMs: 1000,
        isCancelled: async () => false,
      };
      let startedDuring: number[] = [];
      const outcome = await runner.runOperator({
        ...request,
        // Polled while the run is on: what it started is seen alive (a check that can fail).
        isCancelled: async () => {
          startedDuring = [...new Set([...startedDuring, ...sleepers(run.tag)])];
          return false;
        },
      });
      await runner.cleanedUp();
      const deadline = Date.now() + 15_000;
      while (sleepers(run.tag).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      results.push({ tag: run.tag, outcome, leftBehind: sleepers(run.tag), startedDuring });
    }
  } finally {
    await runner.close();
  }
  process.stdout.write(`${JSON.stringify({ decision, uid: process.getuid?.(), pid: process.pid, results })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  // Exits even with a runner still open.
  process.exit(1);
});
