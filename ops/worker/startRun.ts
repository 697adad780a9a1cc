import { chown, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CodeBlock, Language, RunLimits } from '../../shared/ports/CodeRunner.ts';
import type { CappedLog } from './boundedOutput.ts';
import { runInstall } from './installStep.ts';
import type { RunControl } from './RunControl.ts';
import type { Failure } from './runOutcome.ts';
import { ProcessDied, type RuntimeProcess } from './RuntimeProcess.ts';
import type { BwrapLayout } from './sandbox.ts';

const CODE_FILE: Record<Language, string> = { python: 'user_code.py', javascript: 'user_code.js' };

/** The run's process is ready and its code file is known (`written`: already on disk). */
export interface Started {
  file: string;
  written: boolean;
}

/**
 * Install step run (the code written before it, as the step may look at it), interpreter ready,
 * output routed to the run's log. Without an install step, an exec writes the code itself.
 */
export async function startRun(
  runner: { oneShot: boolean; bwrap: BwrapLayout | undefined },
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
  if (written) {
    // A forked process makes its directory itself: it exists once the process is ready. A spawned
    // one starts in it, so its start overlaps with writing the code and the install step.
    if (proc.makesOwnDir) {
      const notReady = await readiness(proc, limits, control);
      if (notReady) return notReady;
    }
    await writeFile(file, codeblock.code, { mode: 0o600 });
    if (proc.runAs) await chown(file, proc.runAs.uid, proc.runAs.gid);
  }
  if (install !== null) {
    const failed = await runInstall(install, proc.dir, limits, control, log, proc.runAs, proc.cgroup, runner.bwrap);
    if (failed) return failed;
  }
  const notReady = await readiness(proc, limits, control);
  if (notReady) return notReady;
  proc.beginRun(log, limits.maxOutputBytes);
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
