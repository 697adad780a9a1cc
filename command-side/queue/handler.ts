import { randomUUID } from 'node:crypto';
import type { EventMetadata } from '../../shared/events.ts';
import type { EventStore, Position } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import { handleCommand, inSequence, loadRevision, lruStateCache, SPEC_RETRY } from '../kernel/handleCommand.ts';
import { queueDecider } from './decide.ts';
import { queueStream, type QueueCommand, type QueueEvent, type QueueState, type ReleaseReason, type SortDict } from './queue.ts';
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
  const cache = lruStateCache<QueueState>(1000);
  const decide = (connectionLaui: Laui, command: QueueCommand, metadata: EventMetadata) =>
    serially(connectionLaui, () => handleCommand(eventStore, queueStream(connectionLaui), queueDecider, command, metadata, SPEC_RETRY, cache));
  const sequence = inSequence(queueDecider);
  const leasesOf = (events: QueueEvent[]): Lease[] =>
    events.flatMap((event) => (event.type === 'TaskLeased' ? [{ taskLaui: event.data.task_laui, dispatchId: event.data.dispatch_id, sessionId: event.data.session_id }] : []));
  const newLeases = (maxParallelism: number) =>
    Array.from({ length: Math.max(0, Math.min(maxParallelism, 1000)) }, () => ({ dispatchId: randomUUID(), sessionId: randomUUID() }));
  return {
  async enqueue(connectionLaui: Laui, task: { laui: Laui; priority: number; sortValues: Record<string, unknown> }, metadata: EventMetadata) {
    const result = await decide(connectionLaui, { kind: 'enqueue', taskLaui: task.laui, priority: task.priority, sortValues: task.sortValues, at: metadata.at }, metadata);
    return { enqueued: result.events.length > 0, position: result.position };
  },

  /**
   * Enqueue and load balancing in one commit (the common path of a run): the task joins the queue
   * and every free slot is leased at once; `enqueued` is false when rule 8 dropped the task.
   */
  async enqueueAndDispatch(
    connectionLaui: Laui,
    task: { laui: Laui; priority: number; sortValues: Record<string, unknown> },
    maxParallelism: number,
    sortDict: SortDict,
    metadata: EventMetadata,
  ): Promise<{ enqueued: boolean; leases: Lease[]; position: Position | null }> {
    const result = await serially(connectionLaui, () =>
      handleCommand(
        eventStore,
        queueStream(connectionLaui),
        sequence,
        [
          { kind: 'enqueue', taskLaui: task.laui, priority: task.priority, sortValues: task.sortValues, at: metadata.at },
          { kind: 'dispatch', maxParallelism, sortDict, leases: newLeases(maxParallelism), at: metadata.at },
        ],
        metadata,
        SPEC_RETRY,
        cache,
      ),
    );
    return { enqueued: result.events.some((event) => event.type === 'TaskEnqueued'), leases: leasesOf(result.events), position: result.position };
  },

  /** Leases every free slot to the first waiting tasks; returns the leases taken. */
  async dispatch(connectionLaui: Laui, maxParallelism: number, sortDict: SortDict, metadata: EventMetadata): Promise<{ leases: Lease[]; position: Position | null }> {
    const result = await decide(connectionLaui, { kind: 'dispatch', maxParallelism, sortDict, leases: newLeases(maxParallelism), at: metadata.at }, metadata);
    return { leases: leasesOf(result.events), position: result.position };
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

  /** Current queue state (through the cache: only new events are read). */
  async state(connectionLaui: Laui): Promise<QueueState> {
    return (await loadRevision(eventStore, queueStream(connectionLaui), queueDecider, cache)).state;
  },
  };
};

export type QueueHandler = ReturnType<typeof queueHandler>;
