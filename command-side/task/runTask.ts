import { AppError, forbidden, notFound, unprocessable } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import { isLaui, type Laui } from '../../shared/ids.ts';
import { leasesOf, type Lease, type QueueEntry } from '../queue/handler.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import { isAdhoc } from '../../shared/task/cron.ts';
import { referencedItems, validateTask, ONLY_TASKS_DETAIL, type ReferencedItem, type TaskValidation } from '../../shared/task/validateTask.ts';
import type { SystemSettings } from '../../shared/task/systemSettings.ts';
import type { ItemDoc } from '../../projections/catalog/itemsProjection.ts';
import { createItem, UNIQUE_KEY_EXISTS } from '../catalog/createItem.ts';
import { validateItem } from '../../shared/item-types/itemTypes.ts';
import { changeTask, taskChangeCompanion } from './changeTask.ts';
import { actionsStatusAfter, runHookList } from '../action/runHooks.ts';
import { leaseCompanions, maxParallelismOf, sendLeases, sortDictOf } from './dispatchConnection.ts';
import type { QueueEvent } from '../queue/queue.ts';
import type { CompanionPlanner } from '../kernel/CompanionAppend.ts';
import { mergedConfigOf } from './mergedConfig.ts';
import { taskHoldingKey } from './taskHoldingKey.ts';
import { validateNewTask } from './validateNewTask.ts';
import { assertManualRun } from './assertManualRun.ts';
import { loadSystemSettings, type TaskDeps } from './taskDeps.ts';
import { referenceChecker } from './checkTaskReferences.ts';

const TERMINAL_STATES = new Set(['success', 'error', 'timeout', 'cancelled', 'fail']);
const NOT_IN_FLIGHT = ['created', 'scheduled', 'success', 'error', 'timeout', 'cancelled', 'fail', 'queued_for_connection'];
/** The entry types of a value of the wrong JSON type (string_type, int_type, dict_type...). */
const WRONG_TYPE = /^(string|int|float|bool|dict|list)_type$/;

const CREATE_REQUIRED = ['name', 'parent_laui', 'project_laui', 'account_laui', 'operator_laui', 'connection_laui'];

export interface RunOutcome {
  taskLaui: Laui;
  /** A pre-action failed or returned false: the task was not queued (see actions_status). */
  skipped?: boolean;
  /** Bus message id when the task was dispatched at once, null while it waits for a slot. */
  executionResultId: string | null;
  position: Position | null;
}

/**
 * POST /task/run: create (when no item_laui) -> validate -> (pre-actions) -> connection queue ->
 * payload templating -> dispatch. Execution then goes on asynchronously in a worker.
 */
export const runTask = async (
  deps: TaskDeps,
  principal: Principal,
  body: Record<string, unknown>,
  metadata: EventMetadata,
  settle: (position: Position | null) => Promise<void>,
): Promise<RunOutcome> => {
  if (body.item_type !== undefined && body.item_type !== 'task') throw unprocessable(ONLY_TASKS_DETAIL);
  let task: ItemDoc;
  if (body.item_laui === undefined) {
    const missing = CREATE_REQUIRED.filter((field) => body[field] === undefined || body[field] === null);
    if (missing.length > 0) throw unprocessable(missing.map((field) => ({ type: 'missing', loc: ['body', field], msg: 'Field required', input: null })));
    // A field of the wrong JSON type is a 422 list entry, as create reports it, before the run
    // rules quote the value in a string detail (`{"frequency": {"toString": "x"}}` was a 500).
    const wrongTypes = validateItem('task', body, 'update').filter((entry) => WRONG_TYPE.test(entry.type));
    if (wrongTypes.length > 0) throw unprocessable(wrongTypes);
    // Also VIEW on every item the body references (planItem's check), before the create actions run:
    // they may be handed the connections the body names.
    await validateNewTask(deps, principal, body);
    task = await createOrFind(deps, principal, body, metadata, settle);
  } else {
    if (!isLaui(body.item_laui)) throw unprocessable([{ type: 'value_error', loc: ['body', 'item_laui'], msg: 'Invalid ObjectId', input: body.item_laui }]);
    // Peeked, not copied: the run pipeline only reads a task's document (runReads).
    const found = await deps.items.peek(body.item_laui);
    if (!found || found.is_deleted) throw notFound('Item not found');
    if (found.item_type !== 'task') throw unprocessable(ONLY_TASKS_DETAIL);
    task = found;
  }
  if (!(await deps.access.can(principal, task, 'EDIT'))) throw forbidden();
  assertManualRun([task]);
  // Checked at every run, not only at creation: a right may have been revoked since.
  await referenceChecker(deps).require(principal, task);
  return enqueueAndDispatch(deps, task, body, metadata);
};

/** Validation, queueing and dispatch of one existing task (POST /task/run; multiple_tasks batches them: runMany). */
export const enqueueAndDispatch = async (deps: TaskDeps, task: ItemDoc, overrides: Record<string, unknown>, metadata: EventMetadata): Promise<RunOutcome> => {
  const prepared = await prepareRun(deps, task, overrides, metadata, runReads(deps));
  if (!prepared.ready) return prepared.outcome;
  const dispatched = await dispatchRuns(deps, prepared.run.connectionLaui, [prepared.run], metadata);
  // One run: any failure is this request's, as when every step ran inline.
  const failure = dispatched.failures.get(task.laui) ?? dispatched.others[0];
  if (failure !== undefined) throw failure;
  return dispatched.outcomes.get(task.laui) ?? { taskLaui: task.laui, executionResultId: null, position: null };
};

/**
 * POST /task/multiple_tasks: every task through the whole pipeline, each validated and pre-actioned
 * on its own (those failing either are omitted, spec 4.2), then queued and dispatched in batches:
 * one queue commit per connection for all of its runs, not one per task, the connections' commits
 * issued together. The catalog reads are shared by the batch. Results keep the request's order; a
 * failure that is not a 422 (a queue commit that failed for good) fails the request, as it would
 * have failed the run alone.
 */
export const runMany = async (
  deps: TaskDeps,
  tasks: ReadonlyArray<ItemDoc>,
  metadata: EventMetadata,
): Promise<{ results: RunOutcome[]; position: Position | null }> => {
  assertManualRun(tasks);
  const reads = runReads(deps);
  const byConnection = new Map<Laui, PreparedRun[]>();
  const kept: ItemDoc[] = [];
  // The same task twice in one request runs once: the repeat is not prepared again (its pre-actions
  // would run twice), and rule 8 would drop its enqueue anyway.
  const seen = new Set<Laui>();
  let latest: Position | null = null;
  const later = (position: Position | null) => {
    if (position !== null && (latest === null || position > latest)) latest = position;
  };
  for (const task of tasks) {
    if (seen.has(task.laui)) continue;
    seen.add(task.laui);
    try {
      const prepared = await prepareRun(deps, task, {}, metadata, reads);
      if (!prepared.ready) {
        // Spec: tasks whose pre-actions fail are silently omitted (their actions_status is written).
        later(prepared.outcome.position);
        continue;
      }
      const runs = byConnection.get(prepared.run.connectionLaui) ?? [];
      runs.push(prepared.run);
      byConnection.set(prepared.run.connectionLaui, runs);
      kept.push(task);
    } catch (error) {
      if (!(error instanceof AppError) || error.status !== 422) throw error;
    }
  }
  const dispatched = await Promise.all([...byConnection].map(([connectionLaui, runs]) => dispatchRuns(deps, connectionLaui, runs, metadata)));
  const outcomes = new Map<Laui, RunOutcome>();
  for (const batch of dispatched) {
    const [failure] = [...batch.failures.values(), ...batch.others];
    if (failure !== undefined) throw failure;
    for (const [laui, outcome] of batch.outcomes) {
      outcomes.set(laui, outcome);
      later(outcome.position);
    }
  }
  const results = kept.map((task) => outcomes.get(task.laui) ?? { taskLaui: task.laui, executionResultId: null, position: null });
  return { results, position: latest };
};

/**
 * Catalog reads a run makes that are the same for every run of a batch (the system settings, the
 * referenced operator, connection, workflow, payload, configs and actions): read once per batch, not
 * once per task. Items are peeked (the stored document, not a copy): a run only reads them.
 */
export interface RunReads {
  settings(): Promise<SystemSettings>;
  item(laui: Laui): Promise<ItemDoc | null>;
}

export const runReads = (deps: Pick<TaskDeps, 'items'>, settings?: SystemSettings): RunReads => {
  let loaded: Promise<SystemSettings> | null = settings ? Promise.resolve(settings) : null;
  const items = new Map<Laui, Promise<ItemDoc | null>>();
  return {
    settings: () => (loaded ??= loadSystemSettings(deps.items)),
    item(laui) {
      let found = items.get(laui);
      if (!found) {
        found = deps.items.peek(laui);
        items.set(laui, found);
      }
      return found;
    },
  };
};

/** The validation verdict of a task against the batch's reads (spec 4.2 rules 2-5). */
export const validateRun = async (reads: RunReads, task: Record<string, unknown>): Promise<TaskValidation> => {
  const settings = await reads.settings();
  const lookup = new Map<string, ReferencedItem>();
  for (const { laui } of referencedItems(task)) {
    const item = await reads.item(laui);
    lookup.set(laui, item ? { item_type: item.item_type, deleted: item.is_deleted } : null);
  }
  return validateTask(task, {
    enforce_connection_operator_mapping: settings.enforce_connection_operator_mapping,
    connection_operator_mapping: settings.connection_operator_mapping,
    items: lookup,
  });
};

/** A validated run whose pre-actions passed, ready to join its connection's queue. */
export interface PreparedRun {
  task: ItemDoc;
  connectionLaui: Laui;
  connection: ItemDoc | null;
  entry: QueueEntry;
  /** The queued_for_connection step (with the merged retry settings) written when the run is queued. */
  changes: Record<string, unknown>;
  /** The session of the task's finished run, whose lease is freed first if it is still held. */
  finishedSession: string | null;
}

/**
 * Everything of a run before the queue: validation (422 AppError), config merge and the pre-actions
 * (rule 7: any that fails or returns false skips the run, recorded in actions_status). `verdict`
 * is a validation already made on these very fields with these reads, so it is not repeated.
 */
export const prepareRun = async (
  deps: TaskDeps,
  task: ItemDoc,
  overrides: Record<string, unknown>,
  metadata: EventMetadata,
  reads: RunReads,
  verdict?: TaskValidation,
): Promise<{ ready: true; run: PreparedRun } | { ready: false; outcome: RunOutcome }> => {
  const checked = verdict ?? (await validateRun(reads, task));
  if (!checked.ok) throw new AppError(checked.status, checked.detail);
  const merged = await mergedConfigOf(deps.items, task);
  // Rule 7: pre-actions are awaited; any that fails or returns false skips the run (not queued).
  const pre = await runHookList(deps, task, 'pre_actions', metadata, merged.config.parameters);
  if (pre.statuses.length > 0) {
    // A pre-action that did not pass makes this record the run's TaskSkipped.
    const reason = pre.allPassed ? undefined : 'pre_actions_skipped';
    const recorded = await changeTask(deps.eventStore, task.laui, { actions_status: actionsStatusAfter(task.actions_status, 'pre_actions', pre.statuses) }, metadata, undefined, reason);
    if (!pre.allPassed) return { ready: false, outcome: { taskLaui: task.laui, executionResultId: null, position: recorded, skipped: true } };
  }
  const changes: Record<string, unknown> = {
    state: 'queued_for_connection',
    user_set_state: null,
    total_retries: merged.total_retries,
    retry_interval: merged.retry_interval,
    last_system_updated_date: metadata.at,
    // Whose rights the run acts with at the worker (checkTaskReferences.ts: runPrincipalLaui).
    run_by: metadata.user_laui ?? task.created_by ?? null,
  };
  if (typeof overrides.logical_date === 'string') changes.logical_date = overrides.logical_date;
  else if (isAdhoc(task.frequency ?? 'ADHOC') && (task.logical_date ?? null) === null) changes.logical_date = metadata.at;
  const connectionLaui = String(task.connection_laui);
  const connection = await reads.item(connectionLaui);
  const sortValues = Object.fromEntries(Object.keys(sortDictOf(connection)).map((field) => [field, task[field] ?? null]));
  // A run that already reached its terminal state may still hold its lease for a moment (the worker
  // writes the state, then leaves the queue): freed in the queue commit so an immediate re-run is not dropped.
  const finishedSession = TERMINAL_STATES.has(String(task.state)) && typeof task.session_id === 'string' ? task.session_id : null;
  return {
    ready: true,
    run: { task, connectionLaui, connection, entry: { laui: task.laui, priority: Number(task.priority ?? 1), sortValues }, changes, finishedSession },
  };
};

export interface DispatchedRuns {
  outcomes: Map<Laui, RunOutcome>;
  /** Runs of the batch whose step after the queue commit failed (they are in the queue). */
  failures: Map<Laui, unknown>;
  /** Failures sending leases that went to tasks outside the batch (waiting since earlier). */
  others: unknown[];
}

/**
 * Queueing and dispatch of prepared runs of one connection: one queue commit enqueues them all (in
 * the given order, which is their arrival order) and leases every free slot; then each leased task
 * is templated, marked queued_in_redis and published, and each task left waiting records
 * queued_for_connection. Those task writes go to different streams and are issued together, so the
 * event store commits them in one transaction instead of one fsync per task. Throws when the queue
 * commit fails (no run of the batch is queued).
 */
export const dispatchRuns = async (deps: TaskDeps, connectionLaui: Laui, runs: ReadonlyArray<PreparedRun>, metadata: EventMetadata): Promise<DispatchedRuns> => {
  const connection = runs[0]?.connection ?? (await deps.items.peek(connectionLaui));
  const finished = runs.flatMap((run) => (run.finishedSession === null ? [] : [{ taskLaui: run.task.laui, sessionId: run.finishedSession }]));
  const enqueue = (plan?: CompanionPlanner<QueueEvent>) =>
    deps.queue.enqueueManyAndDispatch(connectionLaui, { tasks: runs.map((run) => run.entry), finished }, maxParallelismOf(connection), sortDictOf(connection), metadata, plan);
  if (deps.eventStore.appendAtomically) return dispatchRunsTogether(deps, connectionLaui, runs, metadata, enqueue);
  const queued = await enqueue();
  const byLaui = new Map(runs.map((run) => [run.task.laui, run]));
  const leasedTasks = new Set(queued.leases.map((lease) => lease.taskLaui));
  const result: DispatchedRuns = { outcomes: new Map(), failures: new Map(), others: [] };
  const positions = new Map<Laui, Position | null>();
  const leased = new Map<Laui, string>();
  const fail = (laui: Laui, error: unknown) => (byLaui.has(laui) ? result.failures.set(laui, error) : result.others.push(error));
  const send = async (lease: Lease) => {
    const run = byLaui.get(lease.taskLaui);
    // Rule 8: a task already in its queue is dropped, and its state stays as the queue left it.
    const lead = run && queued.enqueued.has(run.task.laui) ? { taskLaui: run.task.laui, changes: run.changes } : null;
    try {
      const sent = await sendLeases(deps, connectionLaui, [lease], metadata, lead);
      positions.set(lease.taskLaui, sent.position);
      const id = sent.sent.get(lease.taskLaui);
      if (id !== undefined) leased.set(lease.taskLaui, id);
    } catch (error) {
      fail(lease.taskLaui, error);
    }
  };
  // Waiting for a slot: record queued_for_connection unless a finishing worker already leased it.
  const wait = async (run: PreparedRun) => {
    const laui = run.task.laui;
    try {
      positions.set(laui, await changeTask(deps.eventStore, laui, run.changes, metadata, NOT_IN_FLIGHT));
    } catch (error) {
      result.failures.set(laui, error);
    }
  };
  await Promise.all([
    ...queued.leases.map(send),
    ...runs.filter((run) => queued.enqueued.has(run.task.laui) && !leasedTasks.has(run.task.laui)).map(wait),
  ]);
  for (const run of runs) {
    const laui = run.task.laui;
    if (result.failures.has(laui)) continue;
    result.outcomes.set(laui, { taskLaui: laui, executionResultId: leased.get(laui) ?? null, position: positions.get(laui) ?? queued.position });
  }
  return result;
};

/**
 * dispatchRuns for stores with multi-stream transactions: every task change the queue decision
 * calls for (queued_for_connection + queued_in_redis of a leased task, queued_for_connection of
 * one left waiting) is a companion of the queue commit, so a run is queued and dispatched in one
 * commit instead of a queue commit followed by the task commits. The messages go out after it.
 */
const dispatchRunsTogether = async (
  deps: TaskDeps,
  connectionLaui: Laui,
  runs: ReadonlyArray<PreparedRun>,
  metadata: EventMetadata,
  enqueue: (plan: CompanionPlanner<QueueEvent>) => ReturnType<TaskDeps['queue']['enqueueManyAndDispatch']>,
): Promise<DispatchedRuns> => {
  const byLaui = new Map(runs.map((run) => [run.task.laui, run]));
  // The tasks a decision enqueued (rule 8 drops those already queued): their queued_for_connection
  // step is written with their next state, as their state stays as the queue left it otherwise.
  let decided: ReadonlyArray<QueueEvent> | null = null;
  let enqueued = new Set<Laui>();
  const enqueuedBy = (events: ReadonlyArray<QueueEvent>): Set<Laui> => {
    if (events !== decided) {
      decided = events;
      enqueued = new Set(events.flatMap((event) => (event.type === 'TaskEnqueued' ? [event.data.task_laui] : [])));
    }
    return enqueued;
  };
  const leases = leaseCompanions(deps, connectionLaui, metadata, (laui, events) => {
    const run = byLaui.get(laui);
    return run && enqueuedBy(events).has(laui) ? run.changes : null;
  });
  const waitPositions = new Map<Laui, Position>();
  const waitFailures = new Map<Laui, unknown>();
  const plan: CompanionPlanner<QueueEvent> = async (events, fresh) => {
    waitPositions.clear();
    waitFailures.clear();
    const leasedNow = new Set(leasesOf(events).map((lease) => lease.taskLaui));
    const waiting = runs.filter((run) => enqueuedBy(events).has(run.task.laui) && !leasedNow.has(run.task.laui));
    const [leased, waits] = await Promise.all([
      leases.plan(events, fresh),
      Promise.all(
        // Waiting for a slot: record queued_for_connection unless a finishing worker already leased it.
        waiting.map(async (run) => {
          try {
            return await taskChangeCompanion(deps.eventStore, run.task.laui, run.changes, metadata, {
              fresh,
              onlyIfStateIn: NOT_IN_FLIGHT,
              committed: (position) => waitPositions.set(run.task.laui, position),
            });
          } catch (error) {
            waitFailures.set(run.task.laui, error);
            return null;
          }
        }),
      ),
    ]);
    return [...leased, ...waits.filter((companion) => companion !== null)];
  };
  const queued = await enqueue(plan);
  const published = await leases.publish();
  const result: DispatchedRuns = { outcomes: new Map(), failures: new Map(waitFailures), others: [] };
  for (const [laui, error] of published.failed) {
    if (byLaui.has(laui)) result.failures.set(laui, error);
    else result.others.push(error);
  }
  for (const run of runs) {
    const laui = run.task.laui;
    if (result.failures.has(laui)) continue;
    const position = published.positions.get(laui) ?? waitPositions.get(laui) ?? queued.position;
    result.outcomes.set(laui, { taskLaui: laui, executionResultId: published.sent.get(laui) ?? null, position });
  }
  return result;
};

/** A task whose unique key exists is the existing task (spec 4.2), not a 409. */
const createOrFind = async (
  deps: TaskDeps,
  principal: Principal,
  body: Record<string, unknown>,
  metadata: EventMetadata,
  settle: (position: Position | null) => Promise<void>,
): Promise<ItemDoc> => {
  const { item_laui: _ignored, logical_date: _logical, ...fields } = body;
  // Rule 7: create actions run before the task is persisted; one returning false fails the creation.
  const create = await runHookList(deps, { ...fields, item_type: 'task' }, 'create_actions', metadata);
  if (!create.allPassed) {
    const failed = create.statuses.find((entry) => entry.state !== 'success');
    throw unprocessable({
      task_name: String(fields.name),
      message: `create action ${failed?.name ?? failed?.laui ?? ''} ${failed?.state === 'failed' ? 'returned false' : `failed: ${failed?.error ?? failed?.state ?? ''}`}`,
    });
  }
  if (create.statuses.length > 0) fields.actions_status = actionsStatusAfter(fields.actions_status, 'create_actions', create.statuses);
  try {
    const created = await createItem(deps, principal, { ...fields, item_type: 'task' }, metadata);
    await settle(created.position);
    const task = await deps.items.peek(created.laui);
    if (!task) throw new Error(`task ${created.laui} is not visible after creation`);
    return task;
  } catch (error) {
    if (!(error instanceof AppError) || error.status !== 409 || error.detail !== UNIQUE_KEY_EXISTS) throw error;
    const existing = await taskHoldingKey(deps, fields, settle);
    if (!existing) throw error;
    return existing;
  }
};
