import { join } from 'node:path';
import type { CodeBlock, RunLimits } from '../../shared/ports/CodeRunner.ts';
import type { CappedLog } from './boundedOutput.ts';
import type { Invoke } from './invokeRequest.ts';
import { raceUntil } from './RunControl.ts';
import { describeCall } from './runOutcome.ts';
import type { RuntimeProcess } from './RuntimeProcess.ts';
import { CODE_FILE } from './startRun.ts';
import type { WarmPool } from './WarmPool.ts';

/**
 * The run's process is gone (killed at the time limit, exited, out of memory): a fresh process
 * loads the code again so that finish is still called. In a directory of its own: the run's
 * directory went with the run's sandbox, and no privileged process takes over what a run left
 * (chowning a tree a run could still be changing would follow its links).
 */
export async function finishProcess(
  runner: { pool: WarmPool; invoke: Invoke; finishTimeoutMs: number },
  codeblock: CodeBlock,
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
  helper.beginRun(log, limits.maxOutputBytes);
  const file = join(helper.dir, CODE_FILE[codeblock.language]);
  const written = await runner.invoke(helper, { op: 'install', file, code: codeblock.code, script: null }, deadline, null);
  if (written.kind !== 'ok') {
    log.note(`finish not called: ${describeCall(written, 'install', runner.finishTimeoutMs)}`);
    return null;
  }
  const loaded = await runner.invoke(helper, { op: 'load', file, dir: helper.dir }, deadline, null);
  if (loaded.kind !== 'ok') {
    log.note(`finish not called: ${describeCall(loaded, 'load', runner.finishTimeoutMs)}`);
    return null;
  }
  log.note('finish is called in a fresh process (the run process had ended)');
  return helper;
}
