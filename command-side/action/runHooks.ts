import type { EventMetadata } from '../../shared/events.ts';
import { isLaui, newSessionId } from '../../shared/ids.ts';
import { effectiveActionTimeout } from '../../shared/task/systemSettings.ts';
import { renderString, renderTemplates, templateVariables } from '../../shared/task/templating.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { mergedConfigOf } from '../../shared/task/mergedConfig.ts';
import { loadSystemSettings } from '../../shared/task/loadSystemSettings.ts';
import { referenceChecker } from '../catalog/checkTaskReferences.ts';
import { connectionNotFound, executeAction, loadConnection, openConnection, type ActionRunDeps } from './executeAction.ts';

/** The four hook lists of a task (spec 2.5 action_type). */
export const HOOK_KINDS = ['create_actions', 'pre_actions', 'running_actions', 'post_actions'] as const;
export type HookKind = (typeof HOOK_KINDS)[number];

/**
 * One hook's run, as recorded in the task's `actions_status[kind]`.
 * state: success (it ran and did not return false), failed (it returned exactly false),
 * error (missing/deleted action or connection, invalid code, an exception, a non-JSON value), timeout.
 */
export interface ActionStatusEntry {
  laui: string;
  name: string;
  action_type: HookKind;
  state: 'success' | 'failed' | 'error' | 'timeout';
  result?: unknown;
  error?: string;
  started_at: string;
  ended_at: string;
  session_id: string;
}

export interface HookListOutcome {
  /** False as soon as one hook failed (returned false, errored, timed out or was missing). */
  allPassed: boolean;
  statuses: ActionStatusEntry[];
}

export type ActionsStatus = Record<HookKind, ActionStatusEntry[]> & Record<string, unknown>;

/** create and pre actions block: the first failure stops the list. Running and post actions all run. */
const STOPS_AT_FIRST_FAILURE: ReadonlySet<HookKind> = new Set(['create_actions', 'pre_actions']);

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** The references of `task.actions[kind]` (objects only; the task schema guarantees the shape). */
export const hookReferences = (task: Readonly<Record<string, unknown>>, kind: HookKind): Array<Record<string, unknown>> => {
  const actions = task.actions;
  if (!isObject(actions)) return [];
  const list = actions[kind];
  return Array.isArray(list) ? list.filter(isObject) : [];
};

/**
 * Runs the hooks of `task.actions[kind]` (spec 2.5, rule 7) one after another in list order and
 * returns their statuses; it writes nothing (the caller records actions_status and decides).
 * Per reference: the action is loaded (missing or deleted: an error entry), name and action_type
 * come from it, the connection is the reference's connection_laui (templated), else the action's
 * own, else none; action_variables (the reference's, else the action's) are templated with the task's
 * variables (rule 9: task fields < merged parameters < builtins); the time limit is
 * max(reference timeout, action_timeout_seconds). `parameters`: the task's merged config
 * parameters; computed from the task's configs when omitted.
 */
export const runHookList = async (
  deps: ActionRunDeps,
  task: Readonly<Record<string, unknown>>,
  kind: HookKind,
  metadata: EventMetadata,
  parameters?: Readonly<Record<string, unknown>> | null,
): Promise<HookListOutcome> => {
  const references = hookReferences(task, kind);
  if (references.length === 0) return { allPassed: true, statuses: [] };
  const settings = await loadSystemSettings(deps);
  const merged = parameters !== undefined ? (parameters ?? {}) : (await mergedConfigOf(deps.items, task as ItemDoc)).config.parameters;
  const statuses: ActionStatusEntry[] = [];
  let allPassed = true;
  for (const reference of references) {
    const entry = await runHook(deps, task, kind, reference, metadata, merged, settings);
    statuses.push(entry);
    if (entry.state !== 'success') {
      allPassed = false;
      if (STOPS_AT_FIRST_FAILURE.has(kind)) break;
    }
  }
  return { allPassed, statuses };
};

const runHook = async (
  deps: ActionRunDeps,
  task: Readonly<Record<string, unknown>>,
  kind: HookKind,
  reference: Record<string, unknown>,
  metadata: EventMetadata,
  parameters: Readonly<Record<string, unknown>>,
  settings: Awaited<ReturnType<typeof loadSystemSettings>>,
): Promise<ActionStatusEntry> => {
  const sessionId = newSessionId();
  const laui = String(reference.laui ?? '');
  const taskFields = {
    task_laui: typeof task.laui === 'string' ? task.laui : null,
    task_name: typeof task.name === 'string' ? task.name : null,
  };
  const refused = (name: string, error: string): ActionStatusEntry => {
    const at = deps.clock.now().toISOString();
    deps.logger.log({
      level: 'error',
      category: 'TASK',
      step: 'action',
      session_id: sessionId,
      message: `Action ${name} (${kind}) not run: ${error}`,
      action_laui: laui,
      action_type: kind,
      status: 'error',
      ...taskFields,
      // The hook's session is this one line: its end.
      session_end: true,
    });
    return { laui, name, action_type: kind, state: 'error', error, started_at: at, ended_at: at, session_id: sessionId };
  };

  const action = isLaui(laui) ? await deps.items.get(laui) : null;
  const fallbackName = typeof reference.name === 'string' ? reference.name : laui;
  if (!action || action.is_deleted || action.item_type !== 'action') return refused(fallbackName, `action item not found: ${laui}`);

  const variables = templateVariables(task, parameters, deps.clock.now());
  const connectionRef = typeof reference.connection_laui === 'string' && reference.connection_laui !== '' ? renderString(reference.connection_laui, variables) : (action.connection_laui ?? null);
  const connection = connectionRef === null ? null : await loadConnection(deps.items, connectionRef);
  if (connectionRef !== null && connection === null) return refused(action.name, connectionNotFound(connectionRef));

  // On behalf of the request's user, else (a scheduled run's pre-actions) the task's creator; the
  // worker's running and post actions carry the run's user in their metadata. Checked now, with the
  // connection as templated: a right revoked since the task was queued stops the hook.
  const actor = metadata.user_laui ?? (isLaui(task.created_by) ? task.created_by : null);
  if (actor !== null) {
    const principal = await deps.access.principalOf(actor);
    if (principal === null) return refused(action.name, `Access denied: the run's user ${actor} no longer exists`);
    const checker = referenceChecker(deps);
    const needed = [action.laui, ...(connection ? [connection.laui] : [])];
    const verdicts = await Promise.all(needed.map((item) => checker.canView(principal, item)));
    const denied = needed.filter((_, index) => !verdicts[index]);
    if (denied.length > 0) return refused(action.name, `Access denied: user ${principal.username || actor} cannot VIEW ${denied.join(', ')}`);
  }

  const rawVariables = isObject(reference.action_variables) ? reference.action_variables : isObject(action.action_variables) ? action.action_variables : {};
  const timeoutSeconds = effectiveActionTimeout(reference.timeout, settings);
  const outcome = await executeAction(deps, {
    action,
    connection: openConnection(connection, deps.secrets),
    actorLaui: actor,
    actionVariables: renderTemplates(rawVariables, variables),
    context: {
      action_laui: action.laui,
      action_name: action.name,
      action_type: kind,
      user_laui: metadata.user_laui,
      ...taskFields,
      logical_date: task.logical_date ?? null,
      ...(kind === 'running_actions' && typeof reference.sla === 'number' ? { sla: reference.sla } : {}),
    },
    sessionId,
    timeoutSeconds,
    logFields: { action_type: kind, ...taskFields, logical_date: task.logical_date ?? null, correlation_id: metadata.correlation_id },
  });
  const times = { started_at: outcome.startedAt.toISOString(), ended_at: outcome.endedAt.toISOString(), session_id: sessionId };
  const head = { laui: action.laui, name: action.name, action_type: kind };
  if (outcome.ok) {
    // Spec 4.2 rule 7: only an explicit `false` fails a hook; any other value passes.
    return { ...head, state: outcome.result === false ? 'failed' : 'success', result: outcome.result, ...times };
  }
  return { ...head, state: outcome.kind === 'timeout' ? 'timeout' : 'error', error: outcome.message, ...times };
};

/**
 * The task's new `actions_status`: the spec 2.4 lists (pre, running, post) plus create_actions, with
 * `kind` replaced by this run's statuses and the other lists (and any other keys) kept.
 */
export const actionsStatusAfter = (previous: unknown, kind: HookKind, statuses: readonly ActionStatusEntry[]): ActionsStatus => {
  const base = isObject(previous) ? previous : {};
  const result: Record<string, unknown> = { ...base };
  for (const list of HOOK_KINDS) result[list] = Array.isArray(base[list]) ? [...(base[list] as unknown[])] : [];
  result[kind] = [...statuses];
  return result as ActionsStatus;
};
