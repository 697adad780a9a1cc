import { ADHOC } from '../../shared/task/cron.ts';
import { toInstant } from '../../shared/task/dates.ts';
import { INITIAL_STATE, isHeartbeatStale, SCHEDULED_FROM } from '../../shared/task/transitions.ts';
import { isUsableReference, itemNotFoundEntry, referencedItems, scheduleProblem, type ItemLookup } from '../../shared/task/validateTask.ts';
import type { SlotWait } from '../../shared/task/SlotWait.ts';
import type { BackfillProgress } from '../../shared/task/backfill/backfillState.ts';

/**
 * GET /task/diagnose (spec 4.2): why a task does not run. Pure: the route gathers the inputs.
 * Every check is in the answer under a stable key, with `triggered` true or false, so clients can
 * show what was checked as well as what is wrong; the title and severity of the ten spec checks are
 * the spec's, details say what was seen. Keys, the spec's ten in spec order:
 *   next_run_in_future, scheduler_not_running, pre_action_failed, state_cancelled,
 *   user_cancellation_requested, end_date_passed, state_not_schedulable, required_item_deleted,
 *   stuck_in_connection_queue, worker_not_running,
 * then three beyond the spec's list: workflow_paused (blocking), since spec 3.2 excludes a task
 * under a PAUSE workflow from ready-to-run and from the scheduler; schedule_invalid (blocking), a
 * schedule that can never run (spec 4.2 rules 3-4: a frequency cron-parser refuses, missing dates,
 * end before start) on a task saved before every write checked it: each run of it is refused with
 * that 422; and waiting_for_worker_slot (info: the run starts when a slot frees), a dispatched run
 * that a worker holds but has no slot for yet, with how long it has waited and how many runs start
 * before it.
 */

export type Severity = 'info' | 'warning' | 'blocking';

export interface CheckResult {
  triggered: boolean;
  severity: Severity;
  title: string;
  details: string;
}

export interface DiagnoseInput {
  task: Record<string, unknown>;
  now: Date;
  /** The project's cron: status, whether a loop is alive (heartbeat younger than 3 intervals), its newest heartbeat. */
  cron: { status: string | null; alive: boolean; latestHeartbeat: Date | null; intervalSeconds: number };
  /** The referenced items found (null: missing). */
  items: ItemLookup;
  staleHeartbeatSeconds: number;
  /** The worker's in-memory heartbeat of this task, when a worker of this process runs it. */
  taskHeartbeat: Date | null;
  workers: { running: boolean; broker: string };
  /** The run's wait for a slot of this process's worker (WorkerSlots), when it holds the run. */
  slotWait?: SlotWait | null;
  /** folder_metadata.state of the task's parent workflow (null: none, or no workflow). */
  workflowState?: string | null;
  /** The task's backfill not completed yet (issue 36), if any. */
  backfill?: BackfillSummary | null;
}

export type BackfillSummary = Pick<BackfillProgress, 'backfill_id' | 'status' | 'total' | 'done' | 'failed' | 'running' | 'pending'>;

const backfillDetails = (backfill: BackfillSummary | null): string =>
  backfill === null
    ? 'No backfill of this task is running'
    : `Backfill ${backfill.backfill_id} (${backfill.status}): ${backfill.done} of ${backfill.total} runs done, ${backfill.failed} failed, ${backfill.running} running, ${backfill.pending} not started; its runs go one at a time between the schedule's (GET /api/v1/task/backfill/${backfill.backfill_id})`;

const PRE_ACTION_FAILURES = new Set(['failed', 'error', 'timeout', 'false']);
const SCHEDULABLE = SCHEDULED_FROM;
const REQUIRED_KINDS = new Set(['operator', 'connection', 'payload', 'config', 'workflow']);

const at = (date: Date | null): string => (date === null ? 'none' : date.toISOString());
const check = (triggered: boolean, severity: Severity, title: string, details: string): CheckResult => ({ triggered, severity, title, details });

const failedPreActions = (task: Record<string, unknown>): string[] => {
  const status = task.actions_status as { pre_actions?: unknown } | undefined;
  const entries = Array.isArray(status?.pre_actions) ? (status.pre_actions as unknown[]) : [];
  return entries.flatMap((entry) => {
    if (entry === null || typeof entry !== 'object') return [];
    const record = entry as Record<string, unknown>;
    // actions_status is whatever POST /task/update stored (any object): only strings are read, as
    // String() of `{"toString": "x"}` throws and made this task's diagnosis a 500 for good.
    const text = (...values: unknown[]): string | undefined => values.find((value): value is string => typeof value === 'string');
    const state = (text(record.state, record.status) ?? '').toLowerCase();
    return PRE_ACTION_FAILURES.has(state) ? [`${text(record.name, record.laui) ?? 'pre-action'} (${state})`] : [];
  });
};

const seconds = (from: Date, to: Date): number => Math.max(0, Math.round((to.getTime() - from.getTime()) / 1000));

const slotWaitDetails = (state: string, wait: SlotWait | null, dispatchedAt: Date | null, now: Date): string => {
  if (wait !== null) {
    const order = wait.policy === 'fair' ? 'slots go in turn between projects' : 'slots go in arrival order';
    return `Waiting for a worker slot for ${seconds(wait.since, now)} s (dispatched ${at(dispatchedAt)}); ${wait.ahead} run(s) ahead of it; ${wait.running} of ${wait.slots} slots busy (${order}). A run waiting for a slot is never reaped.`;
  }
  if (state !== 'queued_in_redis') return `State is ${state}, not waiting for a worker slot`;
  // Another process's worker holds it (the roles of the distributed mode), or none took it yet.
  return `Dispatched ${dispatchedAt === null ? 'at an unknown time' : `${seconds(dispatchedAt, now)} s ago (${at(dispatchedAt)})`}; no worker of this process holds it, so its place in a worker's queue is not known here`;
};

export function diagnoseTask(input: DiagnoseInput): Record<string, CheckResult> {
  const { task, now, cron } = input;
  const state = String(task.state ?? INITIAL_STATE);
  const scheduled = (task.frequency ?? ADHOC) !== ADHOC;
  const next = toInstant(task.next_run_date);
  const end = toInstant(task.end_date);
  const preFailures = failedPreActions(task);
  const missing = referencedItems(task)
    .filter(({ kind, laui }) => REQUIRED_KINDS.has(kind) && !isUsableReference(kind, input.items.get(laui)))
    .map(({ kind, laui }) => itemNotFoundEntry(kind, laui));
  const beat = input.taskHeartbeat ?? toInstant(task.latest_heartbeat);
  const stale = isHeartbeatStale({ ...task, latest_heartbeat: beat, task_instance_start_date: toInstant(task.task_instance_start_date) }, now, input.staleHeartbeatSeconds);
  const waitingSince = toInstant(task.last_system_updated_date);
  const pickupOverdue = waitingSince !== null && now.getTime() - waitingSince.getTime() > input.staleHeartbeatSeconds * 1000;
  const schedule = scheduleProblem(task);
  const slotWait = state === 'queued_in_redis' ? (input.slotWait ?? null) : null;
  const cronText = `project cron ${cron.status ?? 'never started'}, latest heartbeat ${at(cron.latestHeartbeat)} (dead after ${3 * cron.intervalSeconds} s)`;
  return {
    next_run_in_future: check(next !== null && next.getTime() > now.getTime(), 'info', 'Next run date in future',
      next === null ? 'The task has no next_run_date' : `next_run_date is ${at(next)}; now is ${at(now)}`),
    scheduler_not_running: check(scheduled && !cron.alive, 'blocking', 'Scheduler not running',
      scheduled ? `${cronText}; start it with POST /api/v1/cron/manage` : `ADHOC tasks do not need the scheduler (${cronText})`),
    pre_action_failed: check(preFailures.length > 0, 'blocking', 'Pre-action failed',
      preFailures.length > 0 ? `Failed pre-actions: ${preFailures.join(', ')}` : 'No pre-action has failed'),
    state_cancelled: check(state === 'cancelled', 'blocking', 'State is cancelled',
      state === 'cancelled' ? 'The task was cancelled; POST /api/v1/task/dangerously_reset makes it scheduled again' : `State is ${state}`),
    user_cancellation_requested: check(task.user_set_state === 'cancel', 'blocking', 'User cancellation requested',
      `user_set_state is ${String(task.user_set_state ?? null)}`),
    end_date_passed: check(end !== null && end.getTime() < now.getTime(), 'blocking', 'End date passed',
      end === null ? 'The task has no end_date' : `end_date is ${at(end)}; now is ${at(now)}`),
    state_not_schedulable: check(!SCHEDULABLE.includes(state), 'warning', 'State not schedulable',
      `State is ${state}; the scheduler takes scheduled and success (and error or timeout for retries)`),
    required_item_deleted: check(missing.length > 0, 'blocking', 'Required item deleted',
      missing.length > 0 ? missing.join('; ') : 'Operator, connection, payload, workflow and attached configs exist'),
    stuck_in_connection_queue: check(stale, 'blocking', 'Stuck in connection queue',
      state === 'running' ? `Running; latest heartbeat ${at(beat)} (stale after ${input.staleHeartbeatSeconds} s)` : `State is ${state}, not running`),
    // A run a worker holds waits for a slot (waiting_for_worker_slot), however long: not a missing worker.
    worker_not_running: check(state === 'queued_in_redis' && slotWait === null && (!input.workers.running || pickupOverdue), 'warning', `Celery not running (worker broker: ${input.workers.broker})`,
      state === 'queued_in_redis'
        ? `Queued for a worker since ${at(waitingSince)}; workers ${input.workers.running ? 'subscribed' : 'not subscribed'} to execute_task`
        : `State is ${state}, not waiting for a worker`),
    workflow_paused: check(input.workflowState === 'PAUSE', 'blocking', 'Workflow paused',
      input.workflowState === 'PAUSE'
        ? `The parent workflow ${String(task.parent_laui)} is paused (folder_metadata.state PAUSE): neither the scheduler nor ready-to-run takes its tasks; set it to ACTIVE`
        : `The parent workflow state is ${input.workflowState ?? 'not set'}`),
    schedule_invalid: check(schedule !== null, 'blocking', 'Schedule invalid',
      schedule !== null
        ? `${schedule}: neither the scheduler nor POST /api/v1/task/run runs it; correct frequency, start_date and end_date with POST /api/v1/catalog/update`
        : scheduled ? 'frequency, start_date and end_date can run' : 'ADHOC: runs when asked'),
    waiting_for_worker_slot: check(slotWait !== null, 'info', 'Waiting for a worker slot', slotWaitDetails(state, slotWait, waitingSince, now)),
    backfill_running: check((input.backfill ?? null) !== null, 'info', 'Backfill running', backfillDetails(input.backfill ?? null)),
  };
}
