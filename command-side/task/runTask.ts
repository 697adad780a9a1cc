import { AppError, forbidden, notFound, unprocessable } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import { isLaui, type Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import { ONLY_TASKS_DETAIL } from '../../shared/task/validateTask.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { validateItem } from '../../shared/item-types/itemTypes.ts';
import { validateNewTask } from './validateNewTask.ts';
import { assertManualRun } from './assertManualRun.ts';
import type { TaskDeps } from './taskDeps.ts';
import { referenceChecker } from '../catalog/checkTaskReferences.ts';
import { createOrFind } from './createOrFind.ts';
import { runReads } from './runReads.ts';
import { prepareRun, type PreparedRun } from './prepareRun.ts';
import { dispatchRuns } from './dispatchRuns.ts';
import type { RunOutcome } from './RunOutcome.ts';

/** The entry types of a value of the wrong JSON type (string_type, int_type, dict_type...). */
const WRONG_TYPE = /^(string|int|float|bool|dict|list)_type$/;

const CREATE_REQUIRED = ['name', 'parent_laui', 'project_laui', 'account_laui', 'operator_laui', 'connection_laui'];

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
  // The run's logical_date (spec 4.2: it may be given at run time) is written as given: a datetime or
  // nothing, as the task schema has it (`"garbage"` was stored, and its templates silently used now).
  if (body.logical_date !== undefined) {
    const entries = validateItem('task', { logical_date: body.logical_date }, 'update');
    if (entries.length > 0) throw unprocessable(entries);
  }
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
  const prepared = await prepareRun(deps, task, { origin: 'user', logicalDate: body.logical_date }, metadata, runReads(deps));
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
      const prepared = await prepareRun(deps, task, { origin: 'user' }, metadata, reads);
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
