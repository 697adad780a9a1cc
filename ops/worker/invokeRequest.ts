import type { CallResult } from './Driver.ts';
import { raceUntil, type RunControl } from './RunControl.ts';
import { ProcessDied, type RuntimeProcess, type WireRequest } from './RuntimeProcess.ts';

/** invokeRequest with the runner's interruptGraceMs: how the steps after a run's own calls send a request. */
export type Invoke = (proc: RuntimeProcess, message: WireRequest, deadline: number, control: RunControl | null) => Promise<CallResult>;

/**
 * One request, raced against the deadline and cancellation. On either, the call is interrupted
 * and given interruptGraceMs to unwind; a process that does not answer by then is killed.
 */
export async function invokeRequest(
  proc: RuntimeProcess,
  message: WireRequest,
  deadline: number,
  control: RunControl | null,
  interruptGraceMs: number,
): Promise<CallResult> {
  if (control?.cancelled) return { kind: 'cancelled' };
  if (!proc.alive) return { kind: 'died', died: new ProcessDied('killed', 'the runtime process is gone') };
  const { id, response } = proc.request(message);
  const settled = response.then(
    (answer): CallResult =>
      answer.ok ? { kind: 'ok', value: answer.value, ...(answer.functions ? { functions: answer.functions } : {}) } : { kind: 'error', error: answer.error },
    (error: unknown): CallResult => ({ kind: 'died', died: error instanceof ProcessDied ? error : new ProcessDied('exited', String(error)) }),
  );
  const first = control ? await control.race(settled, deadline) : await raceUntil(settled, deadline);
  if (first !== 'deadline' && first !== 'cancelled') return first;
  proc.interrupt(id);
  const after = await raceUntil(settled, Date.now() + interruptGraceMs);
  if (after === 'deadline' || (typeof after === 'object' && after.kind === 'died')) proc.kill('killed');
  return { kind: first === 'deadline' ? 'timeout' : 'cancelled' };
}
