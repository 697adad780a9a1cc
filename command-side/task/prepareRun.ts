import { AppError } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import { runChanges, TERMINAL_STATES, type RunOrigin } from '../../shared/task/transitions.ts';
import type { TaskRecord } from '../../shared/task/taskFields.ts';
import type { TaskValidation } from '../../shared/task/validateTask.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { QueueEntry } from '../queue/handler.ts';
import { actionsStatusAfter, runHookList } from '../action/runHooks.ts';
import { changeTask } from './changeTask.ts';
import { sortDictOf } from './dispatchConnection.ts';
import { mergedConfigOf } from '../../shared/task/mergedConfig.ts';
import type { RunOutcome } from './RunOutcome.ts';
import type { RunReads } from './runReads.ts';
import type { TaskDeps } from './taskDeps.ts';
import { validateRun } from './validateRun.ts';


/** Who starts the run, and the logical_date its request names (POST /task/run; checked to be a datetime). */
export interface RunStart {
  origin: RunOrigin;
  logicalDate?: unknown;
  /** A backfill's run (issue 36): its step's logical_date, the schedule kept. */
  backfillId?: string;
}

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
  start: RunStart,
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
  const { changes } = runChanges(
    {
      trigger: 'RunRequested',
      origin: start.origin,
      at: new Date(metadata.at),
      logicalDate: start.logicalDate,
      totalRetries: merged.total_retries,
      retryInterval: merged.retry_interval,
      runBy: metadata.user_laui ?? (typeof task.created_by === 'string' ? task.created_by : null),
      ...(start.backfillId === undefined ? {} : { backfillId: start.backfillId }),
    },
    task as TaskRecord,
  );
  const connectionLaui = String(task.connection_laui);
  const connection = await reads.item(connectionLaui);
  const sortValues = Object.fromEntries(Object.keys(sortDictOf(connection)).map((field) => [field, task[field] ?? null]));
  // A run that already reached its terminal state may still hold its lease for a moment (the worker
  // writes the state, then leaves the queue): freed in the queue commit so an immediate re-run is not dropped.
  const finishedSession = TERMINAL_STATES.includes(String(task.state)) && typeof task.session_id === 'string' ? task.session_id : null;
  return {
    ready: true,
    run: { task, connectionLaui, connection, entry: { laui: task.laui, priority: Number(task.priority ?? 1), sortValues }, changes, finishedSession },
  };
};
