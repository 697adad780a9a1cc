/** The states of a run under way (spec 3.1): the task is queued or running. */
export const ACTIVE_STATES = new Set(['queued_for_connection', 'queued_in_redis', 'running']);

/** What the task looked like when the user asked: a change of any of these is a new run. */
export interface RunMarks {
  session_id: unknown;
  iteration: unknown;
  last_run_date: unknown;
}

/** A run or a cancellation the user asked for from this panel, followed until the run ends. */
export interface RunRequest {
  kind: 'run' | 'cancel';
  before: RunMarks;
  /** The task was seen queued or running since the request. */
  seenActive: boolean;
}

/** The task as read from the catalog: state, last_run_output and the run marks matter here. */
export type TaskSnapshot = Readonly<Record<string, unknown>>;

export const marksOf = (task: TaskSnapshot): RunMarks => ({ session_id: task.session_id, iteration: task.iteration, last_run_date: task.last_run_date });

/**
 * The run asked for has ended: the task is in no active state, and it did run since the request
 * (seen queued or running, or its run marks moved). Until then a task still in its previous final
 * state is a request the service has not taken up yet, not an ended run.
 */
export const requestEnded = (request: RunRequest, task: TaskSnapshot): boolean => {
  if (ACTIVE_STATES.has(String(task.state))) return false;
  if (request.kind === 'cancel' || request.seenActive) return true;
  const now = marksOf(task);
  return now.session_id !== request.before.session_id || now.iteration !== request.before.iteration || now.last_run_date !== request.before.last_run_date;
};

export interface Banner {
  kind: 'info' | 'success' | 'error';
  text: string;
}

const WAITING: Record<string, string> = {
  queued_for_connection: 'Run queued: waiting for a free slot on its connection',
  queued_in_redis: 'Run queued: waiting for a worker',
  running: 'Run running',
};

/** The error a failed run reported (`last_run_output.error`), when it is text. */
const reportedError = (output: unknown): string | null => {
  const error = output !== null && typeof output === 'object' ? (output as { error?: unknown }).error : undefined;
  return typeof error === 'string' && error !== '' ? error : null;
};

/**
 * The banner of a requested run, from the task's state as last read: requested, queued, running,
 * then how it ended (success, error, timeout, fail, cancelled); the same after a cancellation.
 */
export const runBanner = (request: RunRequest, task: TaskSnapshot): Banner => {
  const state = String(task.state ?? 'scheduled');
  if (requestEnded(request, task)) {
    if (state === 'success') return { kind: 'success', text: 'Run finished: success' };
    if (state === 'cancelled') return { kind: 'info', text: 'Run finished: cancelled' };
    if (state === 'scheduled') return { kind: 'info', text: 'Run ended: the task is scheduled again' };
    const error = reportedError(task.last_run_output);
    return { kind: 'error', text: `Run finished: ${state}${error ? ` (${error})` : ''}` };
  }
  if (request.kind === 'cancel') return { kind: 'info', text: 'Cancellation requested: the worker stops the run at its next check' };
  return WAITING[state] ? { kind: 'info', text: WAITING[state] } : { kind: 'success', text: 'Run requested' };
};
