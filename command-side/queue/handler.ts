import { randomUUID } from 'node:crypto';
import type { EventMetadata } from '../../shared/events.ts';
import type { EventStore, Position } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import { handleCommand, loadState } from '../kernel/handleCommand.ts';
import { queueDecider } from './decide.ts';
import { queueStream, type QueueCommand, type ReleaseReason, type SortDict } from './queue.ts';
import { keyedMutex } from '../../shared/keyedMutex.ts';

export interface Lease {
  taskLaui: Laui;
  dispatchId: string;
  sessionId: string;
}

/**
 * Queue commands with the spec's retry rule (5 attempts, exponential backoff from 100 ms) applied
 * by handleCommand: a conflict means another dispatcher moved first, so the decision is remade.
 */
export const queueHandler = (eventStore: EventStore) => {
  const serially = keyedMutex();
  const decide = (connectionLaui: Laui, command: QueueCommand, metadata: EventMetadata) =>
    serially(connectionLaui, () => handleCommand(eventStore, queueStream(connectionLaui), queueDecider, command, metadata));
  return {
  async enqueue(connectionLaui: Laui, task: { laui: Laui; priority: number; sortValues: Record<string, unknown> }, metadata: EventMetadata) {
    const result = await decide(connectionLaui, { kind: 'enqueue', taskLaui: task.laui, priority: task.priority, sortValues: task.sortValues, at: metadata.at }, metadata);
    return { enqueued: result.events.length > 0, position: result.position };
  },

  /** Leases every free slot to the first waiting tasks; returns the leases taken. */
  async dispatch(connectionLaui: Laui, maxParallelism: number, sortDict: SortDict, metadata: EventMetadata): Promise<{ leases: Lease[]; position: Position | null }> {
    const leases = Array.from({ length: Math.max(0, Math.min(maxParallelism, 1000)) }, () => ({ dispatchId: randomUUID(), sessionId: randomUUID() }));
    const result = await decide(connectionLaui, { kind: 'dispatch', maxParallelism, sortDict, leases, at: metadata.at }, metadata);
    return {
      leases: result.events.flatMap((event) =>
        event.type === 'TaskLeased' ? [{ taskLaui: event.data.task_laui, dispatchId: event.data.dispatch_id, sessionId: event.data.session_id }] : [],
      ),
      position: result.position,
    };
  },

  /** Finish or reap: frees the slot (or drops a waiting entry); 404 when the task is not queued. */
  async release(connectionLaui: Laui, taskLaui: Laui, dispatchId: string | null, reason: ReleaseReason, metadata: EventMetadata) {
    const result = await decide(connectionLaui, { kind: 'release', taskLaui, dispatchId, reason, at: metadata.at }, metadata);
    return { released: result.events.length > 0, position: result.position };
  },

  async remove(connectionLaui: Laui, taskLaui: Laui, metadata: EventMetadata) {
    const result = await decide(connectionLaui, { kind: 'remove', taskLaui, at: metadata.at }, metadata);
    return result.position;
  },

  state(connectionLaui: Laui) {
    return loadState(eventStore, queueStream(connectionLaui), queueDecider);
  },
  };
};

export type QueueHandler = ReturnType<typeof queueHandler>;
