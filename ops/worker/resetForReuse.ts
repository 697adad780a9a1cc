import type { Invoke } from './invokeRequest.ts';
import { raceUntil } from './RunControl.ts';
import type { RuntimeProcess } from './RuntimeProcess.ts';

const RESET_TIMEOUT_MS = 2000;

/**
 * After a reuse run: the process empties its own directory and moves into a new run directory
 * inside it. An exec asked for that already (the process did it right after its last line);
 * otherwise a recycle request does it.
 */
export async function resetForReuse(proc: RuntimeProcess, invoke: Invoke): Promise<boolean> {
  const own = proc.takeSelfReset();
  if (own) {
    const ok = await raceUntil(own.done, Date.now() + RESET_TIMEOUT_MS);
    if (ok !== true) return false;
    proc.dir = own.dir;
    return true;
  }
  const dir = proc.nextRunDir();
  const result = await invoke(proc, { op: 'recycle', next: dir }, Date.now() + RESET_TIMEOUT_MS, null);
  if (result.kind !== 'ok') return false;
  proc.dir = dir;
  return true;
}
