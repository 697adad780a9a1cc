import { QUEUED_STATE } from '../../shared/task/transitions.ts';
import { decideRun, onlyChangesOf } from '../../shared/task/runLifecycle.ts';
import type { TaskRecord } from '../../shared/task/taskFields.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { taskChangeCompanion, taskViewOf } from './changeTask.ts';
import type { ItemState } from '../catalog/item.ts';
import type { CompanionAppend, CompanionPlanner } from '../kernel/CompanionAppend.ts';
import type { QueueEvent } from '../../shared/domain-events/queueEvents.ts';
import { leasesOf, type EndedLease, type Lease, type QueueRun } from '../queue/handler.ts';
import { EXECUTE_TASK, type TaskDeps } from './taskDeps.ts';
import { renderPayload } from './renderPayload.ts';
import { runPrincipalLaui } from '../catalog/checkTaskReferences.ts';
import { abandonRun } from './abandonRun.ts';

/** What a worker receives on `execute_task`. */
export interface ExecuteTaskMessage {
  task_laui: Laui;
  connection_laui: Laui;
  dispatch_id: string;
  session_id: string;
  /** A user access token generated at dispatch (spec 4.2 rule 1), for workers that report over HTTP. */
  access_token: string;
  payload: unknown;
  user_laui: Laui | null;
  /** Log position of the queued_in_redis change: a worker reads the task only once its read model has it. */
  position: string | null;
  /**
   * The task's project: the share whose turn the run waits for at a worker (WorkerSlots). Absent
   * from messages sent before it existed: those share one turn.
   */
  project_laui?: Laui | null;
  /**
   * When the run was requested (its queued_for_connection step): the worker's queue-wait metric
   * runs from here to its pick-up. Absent from messages sent before it existed.
   */
  requested_at?: string;
}

/** Worker tokens outlive the longest run they may report on. */
const WORKER_TOKEN_TTL_SECONDS = 24 * 60 * 60;
const WORKER_TOKEN_CACHE_SIZE = 10_000;
/** The `purpose` claim of a dispatch token (ops/http/authenticate.ts scopes it to its task). */
export const WORKER_TOKEN_PURPOSE = 'worker';

/**
 * Load balancing of rule 8 for one connection: lease every free slot to the first waiting tasks,
 * template each leased task's payload, mark it queued_in_redis with its session and publish it.
 * With `finished` (spec 3.1, a worker's finish) the run first leaves its slot, in the same queue
 * commit, and only if the lease is still that run's: a reaped or reset lease is left alone; with
 * `released`, whatever holds it. A run's end comes here through endRun.
 * The task changes are companions of the queue commit (leaseCompanions), `alongside` with them.
 * Returns the bus message id per task (execution_result_id).
 */
export const dispatchConnection = async (
  deps: TaskDeps,
  connectionLaui: Laui,
  metadata: EventMetadata,
  frees: {
    /** An ended run's lease, freed while it is still that session's. */
    finished?: EndedLease;
    /** A task freed whatever dispatch holds it (POST /task/finish: 404 when it is not in the queue). */
    released?: Laui;
    /** A change of the freed run's task written first in the same commit (its terminal state). */
    alongside?: (fresh: boolean) => Promise<CompanionAppend | null>;
    /** false: free the slot without leasing it (a run abandoned because the bus refused its message). */
    leaseNext?: boolean;
  } = {},
): Promise<{ sent: Map<Laui, string>; position: Position | null }> => {
  const { finished, released, alongside, leaseNext = true } = frees;
  const connection = await deps.items.peek(connectionLaui);
  const batch = { tasks: [], finished: finished ? [finished] : [], released: released ? [released] : [] };
  const leases = leaseCompanions(deps, connectionLaui, metadata);
  const plan: CompanionPlanner<QueueEvent> = async (events, fresh) => {
    const [own, leased] = await Promise.all([alongside ? alongside(fresh) : null, leases.plan(events, fresh)]);
    return own ? [own, ...leased] : leased;
  };
  const queued = await withCompanions(deps.queue.decideManyAndDispatch(connectionLaui, batch, leaseNext ? maxParallelismOf(connection) : 0, sortDictOf(connection), metadata), plan);
  const published = await leases.publish();
  // A lease whose task could not be sent fails the call (its run was ended and its slot freed).
  const [failure] = published.failed.values();
  if (published.failed.size > 0) throw failure;
  return { sent: published.sent, position: queued.position };
};

/**
 * load -> decide -> commit across the queue and the tasks: the queue decides its events, this side
 * decides the task changes they call for (`plan`, on every attempt's decision), and the queue
 * commits both in one commit. The queue hands decisions out and takes appends back; it never runs
 * task code.
 */
export const withCompanions = async <Result>(run: QueueRun<Result>, plan: CompanionPlanner<QueueEvent>): Promise<Result> => {
  for await (const turn of run.decisions) turn.commitWith(plan(turn.events, turn.fresh));
  return run.result;
};

export const maxParallelismOf = (connection: ItemDoc | null): number => (typeof connection?.max_parallelism === 'number' ? connection.max_parallelism : 1);
export const sortDictOf = (connection: ItemDoc | null): Record<string, string> => (connection?.sort_dict as Record<string, string> | undefined) ?? {};

/** A leased task made ready to send: its templated payload (its queued_in_redis change: leaseChanges). */
interface PreparedLease {
  lease: Lease;
  task: ItemDoc;
  payload: unknown;
  /** See ExecuteTaskMessage.requested_at. */
  requestedAt: string;
}

/**
 * The queued_in_redis step of a leased task (after its queued_for_connection step when it leads),
 * decided by the lifecycle (SlotLeased) on the task as the commit is decided on.
 */
const leaseChanges =
  (lease: Lease, metadata: EventMetadata, leading: Record<string, unknown> | null) =>
  (state: ItemState): Array<Record<string, unknown>> => {
    const fields = state.status === 'none' ? {} : state.fields;
    const queued = onlyChangesOf(decideRun({ ...fields, ...leading } as TaskRecord, { trigger: 'SlotLeased', at: new Date(metadata.at), sessionId: lease.sessionId, dispatchId: lease.dispatchId }));
    return leading ? [leading, queued] : [queued];
  };

/**
 * The task of a lease, templated; null when the task is gone. The fields come from `decided`, the
 * task's stream as its queued_in_redis change was decided on, never from the read model alone: the
 * read model may lag the stream (another process's run just finished and advanced logical_date), and
 * the payload's {{ds}} must be the logical date this run commits under.
 */
const prepareLease = async (
  deps: TaskDeps,
  lease: Lease,
  metadata: EventMetadata,
  leading: Record<string, unknown> | null,
  decided: ItemState,
): Promise<PreparedLease | null> => {
  // peek: the task is only read (templating, the message), never changed; a copy per dispatched
  // task was ~5% of a scheduler cycle. It gives what the stream's fields do not hold (created_by).
  // The leading queued_for_connection step is laid over in the view's own copy (a second copy of a
  // task's document per lease was ~1% of what a run allocates).
  const task = taskViewOf(await deps.items.peek(lease.taskLaui), decided, leading);
  if (task === null) return null;
  const payload = await renderPayload(deps, task, metadata);
  // Every queued_for_connection step stamps last_system_updated_date (a request, a due run's claim,
  // a retry); the lease's own queued_in_redis step, planned beside this, stamps it again.
  const requestedAt = task.state === QUEUED_STATE && typeof task.last_system_updated_date === 'string' ? task.last_system_updated_date : metadata.at;
  return { lease, task, payload, requestedAt };
};

/** Publishes `execute_task` for a leased task whose queued_in_redis change is committed (at `position`). */
const publishLease = async (deps: TaskDeps, connectionLaui: Laui, prepared: PreparedLease, position: Position | null, metadata: EventMetadata): Promise<string> => {
  const { task, lease } = prepared;
  // The run's principal, not whoever's request freed the slot: a waiting task is often dispatched
  // by another user's finish or run.
  const user = runPrincipalLaui(task);
  const message: ExecuteTaskMessage = {
    task_laui: task.laui,
    connection_laui: connectionLaui,
    dispatch_id: lease.dispatchId,
    session_id: lease.sessionId,
    access_token: await workerToken(deps, user, task.laui),
    payload: prepared.payload,
    user_laui: user,
    position: position === null ? null : position.toString(),
    project_laui: typeof task.project_laui === 'string' ? task.project_laui : null,
    requested_at: prepared.requestedAt,
  };
  // The trace goes on with the message (its headers): the request's, or a trace of the run's own.
  const id = await deps.bus.publish(EXECUTE_TASK, task.laui, message, deps.tracing?.dispatched(task.laui, metadata.correlation_id));
  deps.logger.log({
    level: 'info',
    category: 'TASK',
    step: 'dispatch',
    message: `Task ${task.name} dispatched to the worker queue`,
    session_id: lease.sessionId,
    task_laui: task.laui,
    task_name: task.name,
    logical_date: task.logical_date ?? null,
  });
  return id;
};

/**
 * A leased run whose message could not be sent ends at once (its slot freed): the reaper leaves a
 * run that has not started alone (judgeLease), and on Kafka it cannot tell an unsent message from
 * one waiting in the broker. Sent after all (a send that failed late), the message finds its task
 * ended and is dropped by the worker.
 */
const abandonUnsent = async (deps: TaskDeps, connectionLaui: Laui, prepared: PreparedLease, error: unknown): Promise<void> => {
  const reason = `the run could not be sent to the workers (${error instanceof Error ? error.message : String(error)}); the run was abandoned`;
  try {
    // Its slot is freed, not leased again at once: the next message would meet the same bus.
    await abandonRun(deps, connectionLaui, prepared.lease, reason, false);
  } catch (failure) {
    deps.logger.log({ level: 'error', category: 'TASK', step: 'dispatch', message: `Task ${prepared.task.name}: ${reason}, and ending it failed: ${String(failure)}`, session_id: prepared.lease.sessionId, task_laui: prepared.task.laui });
  }
};

/**
 * Sends leased tasks to the workers: each leased task's changes (queued_in_redis with the lease's
 * session, after its queued_for_connection step when `leadOf` gives one: a task enqueued in the same
 * commit as its lease) are companions of the queue commit that leases it (one commit instead of two
 * in sequence where the store has multi-stream transactions), planned again on every attempt of
 * that commit. `publish` then sends the tasks whose changes were committed. A task whose change
 * cannot be planned or written (it was deleted meanwhile) keeps its lease without a message:
 * `failed` holds its error and the reaper frees the slot. One whose message cannot be sent is
 * ended at once (abandonUnsent).
 */
export const leaseCompanions = (
  deps: TaskDeps,
  connectionLaui: Laui,
  metadata: EventMetadata,
  leadOf: (taskLaui: Laui, events: ReadonlyArray<QueueEvent>) => Record<string, unknown> | null = () => null,
) => {
  let order: Laui[] = [];
  let planned = new Map<Laui, { prepared: PreparedLease; position: Position | null }>();
  const failed = new Map<Laui, unknown>();
  const fail = (laui: Laui, error: unknown) => {
    planned.delete(laui);
    failed.set(laui, error);
  };
  /** One lease's change, decided on the cache unless `fresh`, and its task templated from the state it was decided on. */
  const planLease = async (lease: Lease, leading: Record<string, unknown> | null, fresh: boolean): Promise<CompanionAppend | null> => {
    let decided: ItemState = { status: 'none' };
    let onCommit = (_position: Position): void => {};
    const companion = await taskChangeCompanion(deps.eventStore, lease.taskLaui, leaseChanges(lease, metadata, leading), metadata, {
      fresh,
      decidedOn: (state) => (decided = state),
      committed: (position) => onCommit(position),
    });
    if (companion === null) return null;
    // Templated from the state the change was decided on: if that was a stale guess, the commit
    // fails on its expected revision and the change is planned again on the stream as it is.
    const prepared = await prepareLease(deps, lease, metadata, leading, decided);
    if (prepared === null) return null;
    const entry = { prepared, position: null as Position | null };
    onCommit = (position) => (entry.position = position);
    planned.set(lease.taskLaui, entry);
    return { ...companion, again: () => planLease(lease, leading, true), failed: (error) => fail(lease.taskLaui, error) };
  };
  const plan: CompanionPlanner<QueueEvent> = async (events, fresh) => {
    const leases = leasesOf(events);
    order = leases.map((lease) => lease.taskLaui);
    planned = new Map();
    failed.clear();
    const companions = await Promise.all(
      leases.map(async (lease) => {
        try {
          return await planLease(lease, leadOf(lease.taskLaui, events), fresh);
        } catch (error) {
          fail(lease.taskLaui, error);
          return null;
        }
      }),
    );
    return companions.filter((companion) => companion !== null);
  };
  /** After the commit: `execute_task` for every leased task whose change was written. */
  const publish = async (): Promise<{ sent: Map<Laui, string>; positions: Map<Laui, Position>; failed: Map<Laui, unknown> }> => {
    const sent = new Map<Laui, string>();
    const positions = new Map<Laui, Position>();
    // In lease order, one at a time.
    for (const laui of order) {
      const entry = planned.get(laui);
      if (!entry || entry.position === null) continue;
      positions.set(laui, entry.position);
      try {
        sent.set(laui, await publishLease(deps, connectionLaui, entry.prepared, entry.position, metadata));
      } catch (error) {
        failed.set(laui, error);
        await abandonUnsent(deps, connectionLaui, entry.prepared, error);
      }
    }
    return { sent, positions, failed };
  };
  return { plan, publish };
};

/**
 * Signing costs (an HMAC since worker tokens have their own audience, an RSA signature before): a
 * worker token is reused while it has an hour left. A token is
 * scoped to one task (claim `task_laui`; the facade lets it call only task/update and task/finish of
 * that task), so tokens are kept per user and task: a re-run of the same task reuses its token.
 */
// Per signer: a token made with one service's key is worthless to another in the same process.
// The signing in flight is shared: concurrent dispatches of one task sign once.
const workerTokens = new WeakMap<TaskDeps['tokens'], Map<string, { token: Promise<string>; expiresAt: number }>>();
const workerToken = (deps: TaskDeps, user: Laui | null, taskLaui: Laui): Promise<string> => {
  const key = `${user ?? ''}:${taskLaui}`;
  let tokens = workerTokens.get(deps.tokens);
  if (!tokens) {
    tokens = new Map();
    workerTokens.set(deps.tokens, tokens);
  }
  const cached = tokens.get(key);
  const now = deps.clock.now().getTime();
  if (cached && cached.expiresAt - now > 3600_000) return cached.token;
  // Bounded: one entry per task dispatched within a day would grow without end.
  if (tokens.size >= WORKER_TOKEN_CACHE_SIZE) tokens.clear();
  const token = deps.tokens.sign('worker', user, { purpose: WORKER_TOKEN_PURPOSE, task_laui: taskLaui }, WORKER_TOKEN_TTL_SECONDS);
  const entry = { token, expiresAt: now + WORKER_TOKEN_TTL_SECONDS * 1000 };
  tokens.set(key, entry);
  // A failed signing is not remembered: the next dispatch tries again.
  token.catch(() => {
    if (tokens.get(key) === entry) tokens.delete(key);
  });
  return token;
};
