import type { RunLimits } from '../../shared/ports/CodeRunner.ts';
import type { Invoke } from './invokeRequest.ts';
import type { RunControl } from './RunControl.ts';
import type { Failure } from './runOutcome.ts';
import type { RuntimeProcess } from './RuntimeProcess.ts';

/**
 * The run's code file and its install step (bashblock), both done by the run's own process
 * (runtime.py / runtime.cjs `install`): as the run's uid, in the run's directory, in its sandbox
 * (namespaces, cgroups, limits), with its scrubbed environment. The service itself never writes into
 * a run's directory nor starts a program for it: a run could have planted a link there (a reuse
 * process's next directory), and a privileged writer would follow it. Output goes to the run's log
 * under the step `install`; a non-zero exit is an `error` with the last bytes of its stderr
 * (retryable: install steps fail transiently). Its background jobs are killed when bash ends.
 */
export async function runInstall(
  proc: RuntimeProcess,
  invoke: Invoke,
  install: { file: string; code: string; script: string | null },
  limits: RunLimits,
  control: RunControl,
): Promise<Failure | null> {
  const result = await invoke(proc, { op: 'install', ...install }, control.deadline, control);
  switch (result.kind) {
    case 'ok':
      return null;
    case 'cancelled':
      return { kind: 'cancelled' };
    case 'timeout':
      return { kind: 'timeout', message: `time limit of ${limits.timeoutMs} ms exceeded while running the bashblock` };
    case 'died':
      return { kind: 'error', message: result.died.message };
    case 'error': {
      const how = result.error.message || 'failed';
      const tail = (result.error.traceback ?? '').trim();
      if (install.script === null) return { kind: 'error', message: how };
      return { kind: 'error', message: `bashblock failed (${how})${tail ? `: ${tail}` : ''}` };
    }
  }
}
