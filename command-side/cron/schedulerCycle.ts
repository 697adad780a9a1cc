import { isDeepStrictEqual } from 'node:util';
import { metadataFor, type EventMetadata } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import { schedulerDue } from '../../shared/task/readyToRun.ts';
import type { SystemSettings } from '../../shared/task/systemSettings.ts';
import type { TaskRecord } from '../../shared/task/taskFields.ts';
import { IN_FLIGHT_STATES, INITIAL_STATE, successChanges } from '../../shared/task/transitions.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { CronLiveness } from '../../projections/cron/cronLiveness.ts';
import { changeTask } from '../task/changeTask.ts';
import { dispatchRuns, type DispatchedRuns } from '../task/dispatchRuns.ts';
import { prepareRun, type PreparedRun } from '../task/prepareRun.ts';
import { runReads } from '../task/runReads.ts';
import { validateRun } from '../task/validateRun.ts';
import { hookReferences } from '../action/runHooks.ts';
import type { TaskDeps } from '../task/taskDeps.ts';
import { claimDueTask, releaseClaim, type Claim } from './claimDueTask.ts';
import { referenceChecker, runRefusal } from '../catalog/checkTaskReferences.ts';
import { catchUpChanges, initialScheduleChanges } from '../../shared/task/scheduleChanges.ts';
import { isBackfillLane } from '../backfill/backfillLanes.ts';

export interface CronDeps extends TaskDeps {
  liveness: CronLiveness;
}

export interface CycleOutcome {
  dispatched: Laui[];
  /**
   * A queued or running scheduled task will be due again the moment it succeeds (its next
   * next_run_date is not later than now: catch-up, spec 3.1 "dispatched at once"), so the loop
   * looks again soon instead of one interval later.
   */
  catchingUp: boolean;
}

const dueAgainOnSuccess = (fields: Record<string, unknown>, now: Date): boolean => {
  try {
    return (fields.frequency ?? 'ADHOC') !== 'ADHOC' && successChanges(fields as TaskRecord, now).dispatchNow;
  } catch {
    return false; // An invalid frequency: validation reports it.
  }
};

/**
 * The tasks a cycle has to look at, found through indexes rather than a scan of the project:
 * next_run_date <= now (ordered index; ISO-8601 UTC strings compare in time order), the retry
 * states, the in-flight states (for catch-up), and tasks whose next_run_date is not set yet.
 */
export const cycleCandidates = async (deps: Pick<CronDeps, 'items'>, projectLaui: Laui, now: Date): Promise<ItemDoc[]> => {
  const base = { project_laui: projectLaui, item_type: 'task', is_deleted: false } as const;
  const found = new Map<string, ItemDoc>();
  const add = (docs: ItemDoc[]) => {
    for (const doc of docs) found.set(doc.laui, doc);
  };
  add(await deps.items.find({ where: base, range: { field: 'next_run_date', lte: now.toISOString() } }));
  for (const state of ['error', 'timeout', ...IN_FLIGHT_STATES]) add(await deps.items.find({ where: { ...base, state } }));
  add(await deps.items.find({ where: { ...base, next_run_date: null } }));
  // A backfill's lane (a copy of a task running one of its steps) never runs on the cron.
  return [...found.values()].filter((doc) => !isBackfillLane(doc)).sort((a, b) => a.created_seq - b.created_seq);
};

/** What a loop remembers between its cycles (lost with the loop: a new loop starts fresh). */
export interface LoopMemory {
  /** The last validation problem logged per task, so a broken task logs once, not every cycle. */
  problems: Map<Laui, string>;
  /** Tasks whose pre-actions skipped the run: not re-checked before this time (ms). */
  recheckAfter: Map<Laui, number>;
}

/**
 * A failing pre-action skips the run (rule 7) and the task stays due, so the next cycle would run the
 * pre-actions again — every second with a short interval, each time recording actions_status in the
 * task's history. The loop re-checks such a task at most once a minute (or once an interval, if longer).
 */
export const PRE_ACTION_RECHECK_MS = 60_000;

export const newLoopMemory = (): LoopMemory => ({ problems: new Map(), recheckAfter: new Map() });

const workflowStateOf = (deps: CronDeps, parentLaui: unknown, cache: Map<string, Promise<string | null>>): Promise<string | null> => {
  if (typeof parentLaui !== 'string') return Promise.resolve(null);
  let state = cache.get(parentLaui);
  if (!state) {
    state = deps.items.peek(parentLaui).then((parent) => {
      const metadata = parent?.folder_metadata as { state?: unknown } | undefined;
      return typeof metadata?.state === 'string' ? metadata.state : null;
    });
    cache.set(parentLaui, state);
  }
  return state;
};

/** The fields validateTask reads: when the claimed stream state has the same, the verdict made before the claim holds. */
const VALIDATED_FIELDS = ['item_type', 'frequency', 'start_date', 'end_date', 'parent_laui', 'operator_laui', 'connection_laui', 'payload_laui', 'attached_config_lauis', 'actions'];

/**
 * Due tasks of a cycle prepared at once (schedule changes, claim, validation, pre-actions). Their
 * writes go to the tasks' own streams, and appends issued in the same tick share one transaction
 * (one fsync) in the event store: one task after the other paid a commit per step and per task.
 */
export const CYCLE_CONCURRENCY = 64;
/** Pre-actions run user code in processes: only this many tasks run theirs at once. */
export const PRE_ACTION_CONCURRENCY = 4;
/** A long cycle keeps the loop's heartbeat fresh at this rate (the loop beats before each cycle). */
const BEAT_EVERY_MS = 1000;

const limiter = (limit: number) => {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async <T>(work: () => Promise<T>): Promise<T> => {
    if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else active += 1;
    try {
      return await work();
    } finally {
      // The slot passes straight to the next waiter, so `active` never overshoots the limit.
      const next = waiting.shift();
      if (next) next();
      else active -= 1;
    }
  };
};

/** A due task that is claimed and ready for its connection's queue. */
interface ClaimedRun {
  task: ItemDoc;
  claim: Claim;
  run: PreparedRun;
  /** Its place in the cycle's candidate order: the arrival order in the queue. */
  index: number;
}

/**
 * One scheduler cycle of one project (spec 4.5): (1) scheduled tasks whose next_run_date is due and
 * not after end_date, (2) retry-eligible tasks, (3) minus tasks under a PAUSE workflow — all three
 * are schedulerDue — then (4) each is claimed (claimDueTask) and sent through the execution pipeline.
 * A task runs at most once per cycle; catch-up runs follow at the next cycle.
 *
 * Two phases, so that the cycle's writes batch instead of costing a commit each:
 * - prepare: each due task, CYCLE_CONCURRENCY at a time, is validated, claimed on its own stream and
 *   has its pre-actions run. The claim is the only guard against a racing loop, and it is per task.
 * - dispatch: per connection, every claimed task joins the queue in one queue commit (in candidate
 *   order) that also leases the free slots (dispatchRuns); connections are dispatched concurrently.
 * Every claim ends dispatched or released: a skipped run (pre-action failed), a failed preparation
 * or a failed dispatch releases its claim. An unexpected error stops taking new tasks, lets the
 * claimed ones finish, then fails the cycle.
 */
export const schedulerCycle = async (
  deps: CronDeps,
  project: ItemDoc,
  settings: SystemSettings,
  memory: LoopMemory,
  beat: () => Promise<void>,
): Promise<CycleOutcome> => {
  const now = deps.clock.now();
  const metadata: EventMetadata = metadataFor(null, now, `cron-${project.laui}`);
  const log = (level: 'info' | 'warning' | 'error', step: string, message: string, task?: ItemDoc) =>
    deps.logger.log({ level, category: 'CRON', step, message, project_laui: project.laui, ...(task ? { task_laui: task.laui, task_name: task.name } : {}) });
  const outcome: CycleOutcome = { dispatched: [], catchingUp: false };
  const workflows = new Map<string, Promise<string | null>>();
  const reads = runReads(deps, settings);
  // One per cycle: the same connection and operator are checked for many tasks, and a right revoked
  // since the last cycle is seen by the next.
  const references = referenceChecker(deps);
  const preActions = limiter(PRE_ACTION_CONCURRENCY);
  const claimed = new Map<Laui, ClaimedRun[]>();
  const sent: ClaimedRun[] = [];
  /** Unexpected errors: the first fails the cycle once every claim made is settled. */
  const errors: unknown[] = [];
  let lastBeat = performance.now();
  const keepBeating = async () => {
    if (performance.now() - lastBeat < BEAT_EVERY_MS) return;
    lastBeat = performance.now();
    await beat();
  };
  const release = async (task: ItemDoc, claim: Claim) => {
    try {
      await releaseClaim(deps.eventStore, task.laui, String(claim.fields.state ?? INITIAL_STATE), metadata);
    } catch (error) {
      errors.push(error);
    }
  };

  const prepare = async (task: ItemDoc, index: number): Promise<void> => {
    if ((IN_FLIGHT_STATES as readonly string[]).includes(String(task.state))) {
      outcome.catchingUp ||= dueAgainOnSuccess(task, now);
      return;
    }
    let fields: Record<string, unknown> = task;
    const initial = initialScheduleChanges(fields as TaskRecord);
    if (initial !== null) {
      await changeTask(deps.eventStore, task.laui, initial, metadata);
      fields = { ...fields, ...initial };
      log('info', 'schedule', `Task ${task.name}: next_run_date initialised to ${initial.next_run_date ?? String(fields.next_run_date)}`, task);
    }
    const workflowState = await workflowStateOf(deps, task.parent_laui, workflows);
    const due = schedulerDue(fields as TaskRecord, now, workflowState);
    if (!due.ready || (memory.recheckAfter.get(task.laui) ?? 0) > now.getTime()) return;
    if (due.path === 'scheduled') {
      const catchUp = catchUpChanges(fields as TaskRecord & Record<string, unknown>, now);
      if (catchUp !== null) {
        await changeTask(deps.eventStore, task.laui, catchUp.changes, metadata);
        fields = { ...fields, ...catchUp.changes };
        log('warning', 'catch-up', `Task ${task.name}: ${catchUp.skipped} due runs skipped (max_catchup_runs); next run for ${catchUp.changes.logical_date}`, task);
      }
    }
    // Validated before the claim, so an invalid task is not claimed and released every cycle.
    const verdict = await validateRun(reads, fields);
    if (!verdict.ok) {
      const problem = typeof verdict.detail === 'string' ? verdict.detail : JSON.stringify(verdict.detail);
      if (memory.problems.get(task.laui) !== problem) log('error', 'validate', `Task ${task.name} is due but invalid: ${problem}`, task);
      memory.problems.set(task.laui, problem);
      return;
    }
    // A scheduled run acts with the rights of the task's creator (README, Security: "Whose rights a run has"), checked at every
    // run: one who can no longer VIEW what the task references stops its runs (logged, not claimed).
    const refusal = await runRefusal(deps, typeof task.created_by === 'string' ? task.created_by : null, fields, [], references);
    if (refusal !== null) {
      if (memory.problems.get(task.laui) !== refusal) log('error', 'access', `Task ${task.name} is due but not run: ${refusal}`, task);
      memory.problems.set(task.laui, refusal);
      return;
    }
    memory.problems.delete(task.laui);
    const claim = await claimDueTask(deps.eventStore, task.laui, now, workflowState, metadata);
    if (claim === null) {
      log('info', 'claim', `Task ${task.name} not claimed: no longer due on its stream (another loop claimed it, or it changed)`, task);
      return;
    }
    const claimedTask = { ...task, ...claim.fields } as ItemDoc;
    try {
      // The stream may be ahead of the read model: the verdict stands only for the same definition.
      const unchanged = VALIDATED_FIELDS.every((field) => isDeepStrictEqual(claimedTask[field], fields[field]));
      const run = () => prepareRun(deps, claimedTask, { origin: 'scheduler' }, metadata, reads, unchanged ? verdict : undefined);
      const prepared = hookReferences(claimedTask, 'pre_actions').length > 0 ? await preActions(run) : await run();
      if (!prepared.ready) {
        await release(task, claim);
        memory.recheckAfter.set(task.laui, now.getTime() + Math.max(PRE_ACTION_RECHECK_MS, settings.project_scheduler_interval * 1000));
        log('warning', 'pre-actions', `Task ${task.name} skipped: a pre-action failed (see actions_status); checked again in a minute`, task);
        return;
      }
      const runs = claimed.get(prepared.run.connectionLaui) ?? [];
      runs.push({ task, claim, run: prepared.run, index });
      claimed.set(prepared.run.connectionLaui, runs);
    } catch (error) {
      // The claim must not strand the task in queued_for_connection outside any queue.
      await release(task, claim);
      log('error', 'dispatch', `Task ${task.name} could not be dispatched: ${error instanceof Error ? error.message : String(error)}`, task);
    }
  };

  const dispatch = async (connectionLaui: Laui, runs: ClaimedRun[]): Promise<void> => {
    runs.sort((a, b) => a.index - b.index);
    const failed = async ({ task, claim }: ClaimedRun, error: unknown) => {
      await release(task, claim);
      log('error', 'dispatch', `Task ${task.name} could not be dispatched: ${error instanceof Error ? error.message : String(error)}`, task);
    };
    let dispatched: DispatchedRuns;
    try {
      dispatched = await dispatchRuns(deps, connectionLaui, runs.map((entry) => entry.run), metadata);
    } catch (error) {
      // The queue commit failed: none of these runs is queued.
      await Promise.all(runs.map((entry) => failed(entry, error)));
      return;
    }
    for (const error of dispatched.others) log('error', 'dispatch', `A waiting task of connection ${connectionLaui} could not be dispatched: ${error instanceof Error ? error.message : String(error)}`);
    for (const entry of runs) {
      const { task, claim } = entry;
      const error = dispatched.failures.get(task.laui);
      if (error !== undefined || !dispatched.outcomes.has(task.laui)) {
        await failed(entry, error ?? new Error('no outcome'));
        continue;
      }
      memory.recheckAfter.delete(task.laui);
      sent.push(entry);
      outcome.catchingUp ||= dueAgainOnSuccess(claim.fields, now);
      log('info', 'dispatch', `Task ${task.name} dispatched (${claim.path}) for ${String(claim.fields.logical_date)}`, task);
    }
    await keepBeating();
  };

  const tasks = await cycleCandidates(deps, project.laui, now);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CYCLE_CONCURRENCY, tasks.length) }, async () => {
      while (errors.length === 0 && next < tasks.length) {
        const index = next;
        next += 1;
        try {
          await prepare(tasks[index] as ItemDoc, index);
          await keepBeating();
        } catch (error) {
          errors.push(error);
        }
      }
    }),
  );
  await Promise.all([...claimed].map(([connectionLaui, runs]) => dispatch(connectionLaui, runs)));
  if (errors.length > 0) throw errors[0];
  outcome.dispatched = sent.sort((a, b) => a.index - b.index).map((entry) => entry.task.laui);
  return outcome;
};
