import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import { changeTask, taskChangeCompanion, type ChangesOf } from './changeTask.ts';
import { dispatchConnection } from './dispatchConnection.ts';
import type { TaskDeps } from './taskDeps.ts';

/** Who frees the run's slot, and how. */
export type SlotRelease =
  /** The run's own lease, only while it is still this session's: `finished` by its worker, `stale` by the reaper. */
  | { sessionId: string; reason: 'finished' | 'stale' }
  /** POST /task/finish: whatever dispatch holds it, or its waiting entry (404 when the task is not in its queue). */
  | { anyDispatch: true };

export interface RunEnd {
  taskLaui: Laui;
  /** The slot freed in the end's queue commit; null: none (POST /task/update: the client's POST /task/finish frees it). */
  slot: SlotRelease | null;
  /**
   * The run's terminal change: the lifecycle's end trigger (decideRun), decided on the task as its
   * stream holds it at the commit, written first in the same commit; only from `endsFrom` when
   * given. `committed` is told once it is written (even when the queue commit then fails, on a
   * store without multi-stream transactions).
   */
  terminal?: { changes: ChangesOf; endsFrom?: readonly string[]; committed?: () => void };
  /** false: the freed slot is not leased again at once (a run abandoned because the bus refused its message). */
  leaseNext?: boolean;
}

/**
 * The one path a run ends by (issue 34), whoever ends it: its worker (Succeeded, Errored, ...), the
 * lease reaper (Reaped), a client over HTTP (POST /task/update with an end state, then POST
 * /task/finish, the spec's worker protocol). The terminal state, the slot's release and the next
 * lease are one queue commit (dispatchConnection: the task changes are companions of the queue's
 * decision); without a slot to free, the terminal change is its own commit.
 */
export const endRun = async (deps: TaskDeps, connectionLaui: Laui, metadata: EventMetadata, end: RunEnd): Promise<{ sent: Map<Laui, string>; position: Position | null }> => {
  const { terminal } = end;
  if (end.slot === null) {
    if (!terminal) return { sent: new Map(), position: null };
    const position = await changeTask(deps.eventStore, end.taskLaui, terminal.changes, metadata, terminal.endsFrom);
    if (position !== null) terminal.committed?.();
    return { sent: new Map(), position };
  }
  const slot = end.slot;
  return dispatchConnection(deps, connectionLaui, metadata, {
    ...('anyDispatch' in slot ? { released: end.taskLaui } : { finished: { taskLaui: end.taskLaui, sessionId: slot.sessionId, reason: slot.reason } }),
    ...(terminal
      ? {
          alongside: (fresh: boolean) =>
            taskChangeCompanion(deps.eventStore, end.taskLaui, terminal.changes, metadata, { fresh, first: true, ...(terminal.endsFrom ? { onlyIfStateIn: terminal.endsFrom } : {}), committed: () => terminal.committed?.() }),
        }
      : {}),
    leaseNext: end.leaseNext ?? true,
  });
};
