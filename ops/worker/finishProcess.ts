import { lchown, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { CodeBlock, RunLimits } from '../../shared/ports/CodeRunner.ts';
import type { CappedLog } from './boundedOutput.ts';
import type { Invoke } from './invokeRequest.ts';
import { raceUntil } from './RunControl.ts';
import { describeCall } from './runOutcome.ts';
import type { RuntimeProcess } from './RuntimeProcess.ts';
import type { RunAs } from './sandbox.ts';
import type { WarmPool } from './WarmPool.ts';

/**
 * The run's process is gone (killed at the time limit, exited, out of memory): a fresh process
 * in the same working directory loads the code again so that finish is still called.
 */
export async function finishProcess(
  runner: { pool: WarmPool; invoke: Invoke; finishTimeoutMs: number },
  codeblock: CodeBlock,
  runDir: string,
  file: string,
  limits: RunLimits,
  log: CappedLog,
  helpers: RuntimeProcess[],
): Promise<RuntimeProcess | null> {
  const deadline = Date.now() + runner.finishTimeoutMs;
  let helper: RuntimeProcess;
  try {
    helper = runner.pool.takeFresh(codeblock.language, limits.memoryMb);
  } catch (error) {
    log.note(`finish not called: ${(error as Error).message}`);
    return null;
  }
  helpers.push(helper);
  const started = await raceUntil(helper.ready.then(() => true, () => false), deadline);
  if (started !== true) {
    log.note('finish not called: no runtime process could be started');
    return null;
  }
  // The run's directory (and what the run left in it) belonged to the run's identity: now the helper's.
  if (helper.runAs) await chownTree(runDir, helper.runAs).catch(() => {});
  // Its own directory stays its home, removed with it.
  const moved = await runner.invoke(helper, { op: 'reset', dir: runDir }, deadline, null);
  if (moved.kind !== 'ok') {
    log.note(`finish not called: ${describeCall(moved, 'reset', runner.finishTimeoutMs)}`);
    return null;
  }
  helper.dir = runDir;
  helper.beginRun(log, limits.maxOutputBytes);
  const loaded = await runner.invoke(helper, { op: 'load', file, dir: runDir }, deadline, null);
  if (loaded.kind !== 'ok') {
    log.note(`finish not called: ${describeCall(loaded, 'load', runner.finishTimeoutMs)}`);
    return null;
  }
  log.note('finish is called in a fresh process (the run process had ended)');
  return helper;
}

/** lchown of a directory and everything in it (a few files: what one run left). */
async function chownTree(dir: string, owner: RunAs): Promise<void> {
  await lchown(dir, owner.uid, owner.gid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(path, owner);
    else await lchown(path, owner.uid, owner.gid);
  }
}
