import { randomUUID } from 'node:crypto';
import type { EventMetadata } from '../../shared/events.ts';
import type { EventStore, Position } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import { handleCommand, loadRevision, lruStateCache, SPEC_RETRY } from '../kernel/handleCommand.ts';
import type { Decider } from '../kernel/Decider.ts';
import { decideQueueGroups, queueDecider, type GroupVerdict } from './decide.ts';
import { queueStream, type QueueCommand, type QueueEvent, type QueueState, type ReleaseReason, type SortDict } from './queue.ts';
import { keyedBatcher } from '../../shared/keyedBatcher.ts';

/** A task as it joins a queue: its priority and the values of the connection's sort_dict fields. */
export interface QueueEntry {
  laui: Laui;
  priority: number;
  sortValues: Record<string, unknown>;
}

export interface Lease {
  taskLaui: Laui;
  dispatchId: string;
  sessionId: string;
}

/** One caller's commands on a connection queue, with the metadata its events carry. */
interface QueueRequest {
  commands: ReadonlyArray<QueueCommand>;
  metadata: EventMetadata;
}

/**
 * Queue commands with the spec's retry rule (5 attempts, exponential backoff from 100 ms) applied
 * by handleCommand: a conflict means another dispatcher moved first, so the decision is remade.
 *
 * A connection's queue is one stream, and every run passes through it twice (enqueue and lease,
 * finish and the next lease). Decided one caller at a time, each waiting for the previous commit,
 * a connection managed one queue commit per commit latency (~250 runs/s with synchronous=FULL,
 * whatever the cores). So the requests that arrive while a commit is in flight go together, in
 * arrival order, as one decision and one append: each decided on the state the previous ones left,
 * exactly as in turn, each caller getting its own events (with its own metadata) or its own error.
 */
export const queueHandler = (eventStore: EventStore) => {
  const cache = lruStateCache<QueueState>(1000);
  const commit = keyedBatcher<QueueRequest, { events: QueueEvent[]; position: Position | null }>(async (connectionLaui, requests) => {
    // The verdicts of the decision that was appended: handleCommand decides once per attempt, and
    // the last attempt's decision is the one written.
    let verdicts: GroupVerdict[] = [];
    let metadataOf: EventMetadata[] = [];
    const groups: Decider<QueueState, ReadonlyArray<QueueRequest>, QueueEvent> = {
      initialState: queueDecider.initialState,
      evolve: queueDecider.evolve,
      decide: (batch, state) => {
        verdicts = decideQueueGroups(batch.map((request) => request.commands), state);
        metadataOf = verdicts.flatMap((verdict, index) => verdict.events.map(() => (batch[index] as QueueRequest).metadata));
        return verdicts.flatMap((verdict) => verdict.events);
      },
    };
    const first = requests[0] as QueueRequest;
    const result = await handleCommand(eventStore, queueStream(connectionLaui), groups, requests, (index) => metadataOf[index] ?? first.metadata, SPEC_RETRY, cache);
    return verdicts.map((verdict): PromiseSettledResult<{ events: QueueEvent[]; position: Position | null }> =>
      'error' in verdict
        ? { status: 'rejected', reason: verdict.error }
        : { status: 'fulfilled', value: { events: verdict.events, position: verdict.events.length > 0 ? result.position : null } },
    );
  });
  const decide = (connectionLaui: Laui, command: QueueCommand, metadata: EventMetadata) => commit(connectionLaui, { commands: [command], metadata });
  const leasesOf = (events: QueueEvent[]): Lease[] =>
    events.flatMap((event) => (event.type === 'TaskLeased' ? [{ taskLaui: event.data.task_laui, dispatchId: event.data.dispatch_id, sessionId: event.data.session_id }] : []));
  const enqueueCommand = (task: QueueEntry, at: string): QueueCommand => ({ kind: 'enqueue', taskLaui: task.laui, priority: task.priority, sortValues: task.sortValues, at });
  const newLeases = (maxParallelism: number) =>
    Array.from({ length: Math.max(0, Math.min(maxParallelism, 1000)) }, () => ({ dispatchId: randomUUID(), sessionId: randomUUID() }));
  /**
   * Many runs of one connection in one commit: leases of finished runs that are still held are
   * freed (`finished`), every task joins the queue in the given order (rule 8 drops those already
   * in it), then every free slot is leased in queue order (sort_dict, priority, arrival). One
   * decision at the stream's revision, like a single enqueue: max_parallelism holds against any
   * concurrent dispatcher, and the slots go to the first tasks of the whole batch rather than to
   * whichever task happened to arrive first.
   */
  const enqueueManyAndDispatch = async (
    connectionLaui: Laui,
    batch: { tasks: ReadonlyArray<QueueEntry>; finished?: ReadonlyArray<{ taskLaui: Laui; sessionId: string }> },
    maxParallelism: number,
    sortDict: SortDict,
    metadata: EventMetadata,
  ): Promise<{ enqueued: Set<Laui>; leases: Lease[]; position: Position | null }> => {
    const commands: QueueCommand[] = [
      ...(batch.finished ?? []).map((run): QueueCommand => ({ kind: 'release_finished', taskLaui: run.taskLaui, sessionId: run.sessionId, at: metadata.at })),
      ...batch.tasks.map((task) => enqueueCommand(task, metadata.at)),
      { kind: 'dispatch', maxParallelism, sortDict, leases: newLeases(maxParallelism), at: metadata.at },
    ];
    const result = await commit(connectionLaui, { commands, metadata });
    const enqueued = new Set(result.events.flatMap((event) => (event.type === 'TaskEnqueued' ? [event.data.task_laui] : [])));
    return { enqueued, leases: leasesOf(result.events), position: result.position };
  };
  return {
  async enqueue(connectionLaui: Laui, task: QueueEntry, metadata: EventMetadata) {
    const result = await decide(connectionLaui, enqueueCommand(task, metadata.at), metadata);
    return { enqueued: result.events.length > 0, position: result.position };
  },

  /**
   * Enqueue and load balancing in one commit (the common path of a run): the task joins the queue
   * and every free slot is leased at once; `enqueued` is false when rule 8 dropped the task.
   */
  async enqueueAndDispatch(
    connectionLaui: Laui,
    task: QueueEntry,
    maxParallelism: number,
    sortDict: SortDict,
    metadata: EventMetadata,
  ): Promise<{ enqueued: boolean; leases: Lease[]; position: Position | null }> {
    const result = await enqueueManyAndDispatch(connectionLaui, { tasks: [task] }, maxParallelism, sortDict, metadata);
    return { enqueued: result.enqueued.has(task.laui), leases: result.leases, position: result.position };
  },

  enqueueManyAndDispatch,

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
