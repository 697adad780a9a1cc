import { randomUUID } from 'node:crypto';
import type { EventMetadata } from '../../shared/events.ts';
import { WrongExpectedVersionError, type EventStore, type Position } from '../../shared/event-store/EventStore.ts';
import { newSessionId, type Laui } from '../../shared/ids.ts';
import { decideOnCache, loadRevision, lruStateCache } from '../kernel/handleCommand.ts';
import { retryOnConflict, SPEC_RETRY, type Attempt, type RetryPolicy } from '../kernel/retryOnConflict.ts';
import { commit, type Committed } from '../kernel/commit.ts';
import type { CompanionAppend } from '../kernel/CompanionAppend.ts';
import type { Decider } from '../kernel/Decider.ts';
import { decideQueueGroups, queueDecider, writtenEvents, type GroupVerdict } from './decide.ts';
import { queueStream, type LeaseIds, type QueueCommand, type QueueState, type SortDict } from './queue.ts';
import type { ReleaseReason, QueueEvent } from '../../shared/domain-events/queueEvents.ts';
import { queueDraft } from './evolve.ts';
import { keyedBatcher } from '../../shared/keyedBatcher.ts';

/** A task as it joins a queue: its priority and the values of the connection's sort_dict fields. */

/** The lease of a run that ended: freed in a queue commit while it is still that session's. */
export interface EndedLease {
  taskLaui: Laui;
  sessionId: string;
  /** `finished` (default): its worker ended it; `stale`: the reaper did. */
  reason?: 'finished' | 'stale';
}

/**
 * What one queue commit does before it leases free slots: leases of ended runs freed (`finished`),
 * tasks freed whatever dispatch holds them (`released`: POST /task/finish, 404 when the task is not
 * in the queue), tasks joining the queue (`tasks`).
 */
export interface DispatchBatch {
  tasks: ReadonlyArray<QueueEntry>;
  finished?: ReadonlyArray<EndedLease>;
  released?: ReadonlyArray<Laui>;
}

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

/** The leases a decision took. */
export const leasesOf = (events: ReadonlyArray<QueueEvent>): Lease[] =>
  events.flatMap((event) => (event.type === 'TaskLeased' ? [{ taskLaui: event.data.task_laui, dispatchId: event.data.dispatch_id, sessionId: event.data.session_id }] : []));

/**
 * The events each caller plans its companions from: its own, except that a lease taken in one
 * decision for a task another caller enqueued in that same decision is planned by the enqueuer
 * (it holds the run's queued_for_connection changes, written with queued_in_redis), never by both.
 */
const planningEvents = (verdicts: ReadonlyArray<GroupVerdict>): QueueEvent[][] => {
  const enqueuer = new Map<Laui, number>();
  verdicts.forEach((verdict, index) => {
    for (const event of verdict.events) if (event.type === 'TaskEnqueued') enqueuer.set(event.data.task_laui, index);
  });
  const planning = verdicts.map((): QueueEvent[] => []);
  verdicts.forEach((verdict, index) => {
    for (const event of verdict.events) {
      const owner = event.type === 'TaskLeased' ? (enqueuer.get(event.data.task_laui) ?? index) : index;
      planning[owner]?.push(event);
    }
  });
  return planning;
};

/**
 * One attempt's decision for a caller that commits appends of its own with it (QueueRun): the
 * events it plans from (planningEvents) and whether they were decided on fresh reads. The caller
 * decides its appends from them and hands them back (`commitWith`, a promise: its rejection fails
 * the commit); the queue then commits them with its events in one commit (commit.ts).
 */
export interface QueueTurn {
  events: ReadonlyArray<QueueEvent>;
  fresh: boolean;
  commitWith(companions: Promise<CompanionAppend[]>): void;
}

/**
 * A queue commit whose caller adds its own appends: `decisions` yields every attempt's decision
 * (one, or more after a conflict), each to be answered before the commit goes on; it ends when the
 * commit is done, and `result` then holds what the commit decided for the caller.
 */
export interface QueueRun<Result> {
  decisions: AsyncIterable<QueueTurn>;
  result: Promise<Result>;
}

/**
 * The queue's side of a QueueRun: `ask` hands a decision out and waits for the caller's appends;
 * `close` ends the caller's iteration. Data goes out, data comes back: the queue never runs the
 * caller's code (issue 34: queue code never calls back into task code).
 */
const turnChannel = () => {
  const pending: QueueTurn[] = [];
  let wake: (() => void) | null = null;
  let closed = false;
  const ask = (events: ReadonlyArray<QueueEvent>, fresh: boolean): Promise<CompanionAppend[]> =>
    new Promise<CompanionAppend[]>((resolve, reject) => {
      pending.push({ events, fresh, commitWith: (companions) => companions.then(resolve, reject) });
      wake?.();
    });
  const close = () => {
    closed = true;
    wake?.();
  };
  async function* turns(): AsyncGenerator<QueueTurn> {
    for (;;) {
      const turn = pending.shift();
      if (turn) yield turn;
      else if (closed) return;
      else await new Promise<void>((resolve) => (wake = resolve));
    }
  }
  return { ask, close, turns: turns() };
};

/** One caller's commands on a connection queue, with the metadata its events carry. */
interface QueueRequest {
  commands: ReadonlyArray<QueueCommand>;
  metadata: EventMetadata;
  /** Where the caller that commits appends of its own with this request's events gets each decision (QueueRun). */
  turns?: ReturnType<typeof turnChannel>;
}

interface QueueResult {
  events: QueueEvent[];
  /** The commit's last position (companions' events included), or null when nothing was written. */
  position: Position | null;
}

/**
 * The queue decider for a batch of callers: one decision over every caller's commands
 * (decideQueueGroups), keeping the verdict per caller and the metadata per event of the last
 * decision made (an attempt decides again; the last attempt's decision is the one written).
 */
const batchDecision = () => {
  let verdicts: GroupVerdict[] = [];
  let metadataOf: EventMetadata[] = [];
  const decider: Decider<QueueState, ReadonlyArray<QueueRequest>, QueueEvent> = {
    initialState: queueDecider.initialState,
    evolve: queueDecider.evolve,
    decide: (batch, state) => {
      verdicts = decideQueueGroups(batch.map((request) => request.commands), state);
      const decided = verdicts.flatMap((verdict) => verdict.events);
      const metadata = verdicts.flatMap((verdict, index) => verdict.events.map(() => (batch[index] as QueueRequest).metadata));
      // Callers get what was decided for them (verdicts); the stream gets the compact form.
      const written = writtenEvents(decided);
      metadataOf = written.from.map((index) => metadata[index] as EventMetadata);
      return written.events;
    },
  };
  return { decider, verdicts: () => verdicts, metadataOf: (index: number): EventMetadata | undefined => metadataOf[index] };
};

/**
 * Queue commands under the spec's retry rule (5 attempts, exponential backoff from 100 ms,
 * retryOnConflict; `retry` is that rule unless a test narrows it): a conflict means another
 * dispatcher moved first, so the decision is remade.
 *
 * A connection's queue is one stream, and every run passes through it twice (enqueue and lease,
 * finish and the next lease). Decided one caller at a time, each waiting for the previous commit,
 * a connection managed one queue commit per commit latency (~250 runs/s with synchronous=FULL,
 * whatever the cores). So the requests that arrive while a commit is in flight go together, in
 * arrival order, as one decision and one append: each decided on the state the previous ones left,
 * exactly as in turn, each caller getting its own events (with its own metadata) or its own error.
 */
export const queueHandler = (eventStore: EventStore, retry: RetryPolicy = SPEC_RETRY) => {
  const cache = lruStateCache<QueueState>(1000);

  /**
   * The batch's decision and every companion append, committed together (commit: one transaction
   * where the store has them). As handleCommand decides: the queue's cached state is used without a
   * read (its append checks it), a decision that writes nothing is confirmed on a fresh read, a
   * conflict on a guessed stream is retried at once, and real contention follows the spec's policy
   * for the whole commit.
   */
  const commitBatch = async (connectionLaui: Laui, requests: QueueRequest[]): Promise<Array<PromiseSettledResult<QueueResult>>> => {
    const stream = queueStream(connectionLaui);
    const batch = batchDecision();
    return retryOnConflict(retry, async (fresh): Promise<Attempt<Array<PromiseSettledResult<QueueResult>>>> => {
      const decided = await decideOnCache(eventStore, stream, batch.decider, requests, cache, fresh);
      const verdicts = batch.verdicts();
      const events = decided.events.map((event, index) => ({ ...event, metadata: batch.metadataOf(index) as EventMetadata }));
      const planning = planningEvents(verdicts);
      const planned = await Promise.all(
        requests.map(async (request, index) => {
          const verdict = verdicts[index] as GroupVerdict;
          return request.turns && !('error' in verdict) ? request.turns.ask(planning[index] ?? [], fresh) : [];
        }),
      );
      const companions: CompanionAppend[] = planned.flat();
      if (requests.length > 1 && new Set(companions.map((companion) => companion.append.streamId)).size < companions.length) {
        // Two callers planned changes of one stream (a task finishing while another caller re-runs
        // it): one commit cannot hold both appends, so the callers go one after the other.
        const settled: Array<PromiseSettledResult<QueueResult>> = [];
        for (const request of requests) {
          try {
            settled.push(...(await commitBatch(connectionLaui, [request])));
          } catch (error) {
            settled.push({ status: 'rejected', reason: error });
          }
        }
        return { done: settled };
      }
      const queueAppend = events.length > 0 ? { streamId: stream, events, expected: decided.loaded.revision ?? ('no_stream' as const) } : null;
      let committed: Committed;
      try {
        committed = await commit(eventStore, queueAppend, companions);
      } catch (error) {
        if (!(error instanceof WrongExpectedVersionError)) throw error;
        const guessed = error.streamId === stream ? decided.guessed : companions.some((companion) => companion.guessed && companion.append.streamId === error.streamId);
        return { conflict: guessed ? 'guessed' : 'contended' };
      }
      if (committed.main) {
        // One copy of the queue for the whole batch (evolve copies its maps at each event).
        const draft = queueDraft(decided.loaded.state);
        for (const event of events) draft.apply(event);
        cache.set(stream, { revision: committed.main.nextExpectedRevision, state: draft.state });
      }
      return {
        done: verdicts.map((verdict, index): PromiseSettledResult<QueueResult> => {
          if ('error' in verdict) return { status: 'rejected', reason: verdict.error };
          const written = verdict.events.length > 0 || (planned[index]?.length ?? 0) > 0;
          return { status: 'fulfilled', value: { events: verdict.events, position: written ? committed.position : null } };
        }),
      };
    });
  };

  const commitQueued = keyedBatcher<QueueRequest, QueueResult>(commitBatch);
  const decide = (connectionLaui: Laui, command: QueueCommand, metadata: EventMetadata) => commitQueued(connectionLaui, { commands: [command], metadata });
  const enqueueCommand = (task: QueueEntry, at: string): QueueCommand => ({ kind: 'enqueue', taskLaui: task.laui, priority: task.priority, sortValues: task.sortValues, at });
  const newLeases = (maxParallelism: number): LeaseIds => {
    const made: Array<{ dispatchId: string; sessionId: string }> = [];
    return { length: Math.max(0, Math.min(maxParallelism, 1000)), at: (index) => (made[index] ??= { dispatchId: randomUUID(), sessionId: newSessionId() }) };
  };
  /**
   * Many runs of one connection in one commit: leases of finished runs that are still held are
   * freed (`finished`), every task joins the queue in the given order (rule 8 drops those already
   * in it), then every free slot is leased in queue order (sort_dict, priority, arrival). One
   * decision at the stream's revision, like a single enqueue: max_parallelism holds against any
   * concurrent dispatcher, and the slots go to the first tasks of the whole batch rather than to
   * whichever task happened to arrive first.
   */
  const dispatchCommands = (batch: DispatchBatch, maxParallelism: number, sortDict: SortDict, at: string): QueueCommand[] => [
    ...(batch.finished ?? []).map((run): QueueCommand => ({ kind: 'release_finished', taskLaui: run.taskLaui, sessionId: run.sessionId, ...(run.reason ? { reason: run.reason } : {}), at })),
    ...(batch.released ?? []).map((taskLaui): QueueCommand => ({ kind: 'release', taskLaui, dispatchId: null, reason: 'finished', at })),
    ...batch.tasks.map((task) => enqueueCommand(task, at)),
    { kind: 'dispatch', maxParallelism, sortDict, leases: newLeases(maxParallelism), at },
  ];
  const dispatched = (result: QueueResult) => ({
    enqueued: new Set(result.events.flatMap((event) => (event.type === 'TaskEnqueued' ? [event.data.task_laui] : []))),
    leases: leasesOf(result.events),
    position: result.position,
  });
  type Dispatched = ReturnType<typeof dispatched>;
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
    batch: DispatchBatch,
    maxParallelism: number,
    sortDict: SortDict,
    metadata: EventMetadata,
  ): Promise<Dispatched> => dispatched(await commitQueued(connectionLaui, { commands: dispatchCommands(batch, maxParallelism, sortDict, metadata.at), metadata }));
  /**
   * enqueueManyAndDispatch whose caller commits appends of its own in the same commit (the task
   * changes the decision calls for): it reads each attempt's decision from `decisions` and answers
   * it (QueueTurn.commitWith), then reads `result`. load -> decide -> commit: the queue decides its
   * events, the caller decides its own from them, one commit holds both.
   */
  const decideManyAndDispatch = (
    connectionLaui: Laui,
    batch: DispatchBatch,
    maxParallelism: number,
    sortDict: SortDict,
    metadata: EventMetadata,
  ): QueueRun<Dispatched> => {
    const turns = turnChannel();
    const result = commitQueued(connectionLaui, { commands: dispatchCommands(batch, maxParallelism, sortDict, metadata.at), metadata, turns }).then(dispatched);
    // The caller reads `result` once its iteration ends: no rejection goes unhandled meanwhile.
    result.then(turns.close, turns.close);
    return { decisions: turns.turns, result };
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
  decideManyAndDispatch,

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
