import { join } from 'node:path';
import type { CodeBlock, Language, RunLimits } from '../../shared/ports/CodeRunner.ts';
import type { CappedLog } from './boundedOutput.ts';
import { runInstall } from './installStep.ts';
import type { Invoke } from './invokeRequest.ts';
import type { RunControl } from './RunControl.ts';
import type { Failure } from './runOutcome.ts';
import { ProcessDied, type RuntimeProcess } from './RuntimeProcess.ts';

export const CODE_FILE: Record<Language, string> = { python: 'user_code.py', javascript: 'user_code.js' };

/** The run's process is ready and its code file is known (`written`: already on disk). */
export interface Started {
  file: string;
  written: boolean;
}

/**
 * Interpreter ready, output routed to the run's log, then the install step when there is one (the
 * code written before it by the process itself, as the step may look at it). Without an install
 * step, an exec writes the code itself; the steps protocol has it written the same way first.
 */
export async function startRun(
  runner: { oneShot: boolean; invoke: Invoke },
  proc: RuntimeProcess,
  codeblock: CodeBlock,
  bashblock: { code: string } | null | undefined,
  limits: RunLimits,
  control: RunControl,
  log: CappedLog,
): Promise<Started | Failure> {
  const file = join(proc.dir, CODE_FILE[codeblock.language]);
  const install = typeof bashblock?.code === 'string' && bashblock.code.trim() !== '' ? bashblock.code : null;
  const written = install !== null || !runner.oneShot;
  const notReady = await readiness(proc, limits, control);
  if (notReady) return notReady;
  proc.beginRun(log, limits.maxOutputBytes);
  if (written) {
    const failed = await runInstall(proc, runner.invoke, { file, code: codeblock.code, script: install }, limits, control);
    if (failed) return failed;
  }
  return { file, written };
}

/** Waits until the process is ready (at once when it is): null, or why the run cannot start. */
export async function readiness(proc: RuntimeProcess, limits: RunLimits, control: RunControl): Promise<Failure | null> {
  if (proc.isReady) return null;
  const ready = await control.race(proc.ready.then(
    () => null,
    (error: unknown) => (error instanceof ProcessDied ? error.message : String(error)),
  ));
  if (ready === 'deadline') return { kind: 'timeout', message: `time limit of ${limits.timeoutMs} ms exceeded while starting the runtime` };
  if (ready === 'cancelled') return { kind: 'cancelled' };
  if (ready !== null) return { kind: 'error', message: ready };
  return null;
}
