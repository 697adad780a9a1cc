import { metadataFor, type EventMetadata } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import { schedulerDue } from '../../shared/task/readyToRun.ts';
import type { SystemSettings } from '../../shared/task/systemSettings.ts';
import type { TaskRecord } from '../../shared/task/taskFields.ts';
import { IN_FLIGHT_STATES, successChanges } from '../../shared/task/transitions.ts';
import { referencedItems, validateTask, type ReferencedItem } from '../../shared/task/validateTask.ts';
import type { ItemDoc } from '../../projections/catalog/itemsProjection.ts';
import type { CronLiveness } from '../../projections/cron/cronLiveness.ts';
import { changeTask } from '../task/changeTask.ts';
import { enqueueAndDispatch } from '../task/runTask.ts';
import type { TaskDeps } from '../task/taskDeps.ts';
import { claimDueTask, releaseClaim } from './claimDueTask.ts';
import { catchUpChanges, initialScheduleChanges } from './scheduleChanges.ts';

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
  return [...found.values()].sort((a, b) => a.created_seq - b.created_seq);
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

const workflowStateOf = async (deps: CronDeps, parentLaui: unknown, cache: Map<string, string | null>): Promise<string | null> => {
  if (typeof parentLaui !== 'string') return null;
  if (!cache.has(parentLaui)) {
    const parent = await deps.items.peek(parentLaui);
    const metadata = parent?.folder_metadata as { state?: unknown } | undefined;
    cache.set(parentLaui, typeof metadata?.state === 'string' ? metadata.state : null);
  }
  return cache.get(parentLaui) ?? null;
};

/** The checks enqueueAndDispatch makes, run before the claim so an invalid task is not claimed and released every cycle. */
const validationProblem = async (deps: CronDeps, task: Record<string, unknown>, settings: SystemSettings): Promise<string | null> => {
  const lookup = new Map<string, ReferencedItem>();
  for (const { laui } of referencedItems(task)) {
    const item = await deps.items.peek(laui);
    lookup.set(laui, item ? { item_type: item.item_type, deleted: item.is_deleted } : null);
  }
  const verdict = validateTask(task, { ...settings, items: lookup });
  return verdict.ok ? null : typeof verdict.detail === 'string' ? verdict.detail : JSON.stringify(verdict.detail);
};

/**
 * One scheduler cycle of one project (spec 4.5): (1) scheduled tasks whose next_run_date is due and
 * not after end_date, (2) retry-eligible tasks, (3) minus tasks under a PAUSE workflow — all three
 * are schedulerDue — then (4) each is claimed (claimDueTask) and sent through the execution pipeline
 * (enqueueAndDispatch). A task runs at most once per cycle; catch-up runs follow at the next cycle.
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
  const workflows = new Map<string, string | null>();
  const tasks = await cycleCandidates(deps, project.laui, now);
  for (const task of tasks) {
    if ((IN_FLIGHT_STATES as readonly string[]).includes(String(task.state))) {
      outcome.catchingUp ||= dueAgainOnSuccess(task, now);
      continue;
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
    if (!due.ready || (memory.recheckAfter.get(task.laui) ?? 0) > now.getTime()) continue;
    if (due.path === 'scheduled') {
      const catchUp = catchUpChanges(fields as TaskRecord & Record<string, unknown>, now);
      if (catchUp !== null) {
        await changeTask(deps.eventStore, task.laui, catchUp.changes, metadata);
        fields = { ...fields, ...catchUp.changes };
        log('warning', 'catch-up', `Task ${task.name}: ${catchUp.skipped} due runs skipped (max_catchup_runs); next run for ${catchUp.changes.logical_date}`, task);
      }
    }
    const problem = await validationProblem(deps, fields, settings);
    if (problem !== null) {
      if (memory.problems.get(task.laui) !== problem) log('error', 'validate', `Task ${task.name} is due but invalid: ${problem}`, task);
      memory.problems.set(task.laui, problem);
      continue;
    }
    memory.problems.delete(task.laui);
    const claim = await claimDueTask(deps.eventStore, task.laui, now, workflowState, metadata);
    if (claim === null) {
      log('info', 'claim', `Task ${task.name} not claimed: no longer due on its stream (another loop claimed it, or it changed)`, task);
      continue;
    }
    try {
      const run = await enqueueAndDispatch(deps, { ...task, ...claim.fields } as ItemDoc, {}, metadata);
      if (run.skipped === true) {
        await releaseClaim(deps.eventStore, task.laui, String(claim.fields.state ?? 'scheduled'), metadata);
        memory.recheckAfter.set(task.laui, now.getTime() + Math.max(PRE_ACTION_RECHECK_MS, settings.project_scheduler_interval * 1000));
        log('warning', 'pre-actions', `Task ${task.name} skipped: a pre-action failed (see actions_status); checked again in a minute`, task);
      } else {
        memory.recheckAfter.delete(task.laui);
        outcome.dispatched.push(task.laui);
        outcome.catchingUp ||= dueAgainOnSuccess(claim.fields, now);
        log('info', 'dispatch', `Task ${task.name} dispatched (${claim.path}) for ${String(claim.fields.logical_date)}`, task);
      }
    } catch (error) {
      // The claim must not strand the task in queued_for_connection outside any queue.
      await releaseClaim(deps.eventStore, task.laui, String(claim.fields.state ?? 'scheduled'), metadata);
      log('error', 'dispatch', `Task ${task.name} could not be dispatched: ${error instanceof Error ? error.message : String(error)}`, task);
    }
    await beat();
  }
  return outcome;
};
