import type { Clock } from '../../shared/clock.ts';
import { isLaui, type Laui } from '../../shared/ids.ts';
import { openSecretField } from '../../shared/item-types/secretFields.ts';
import { resolveItemType } from '../../shared/item-types/itemTypes.ts';
import type { CodeRunner, RunLimits } from '../../shared/ports/CodeRunner.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import type { SecretBox } from '../../shared/ports/SecretBox.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { AccessControl } from '../../projections/catalog/accessControl.ts';
import { installStep, normaliseCodeBlock } from './codeBlocks.ts';
import { secretStringsOf } from '../../shared/item-types/secretFields.ts';
import { runSessionLog } from '../../shared/task/runSessionLog.ts';

/**
 * Ports an action run needs: the items read model (the action and its connection), the secret box
 * (a connection's content is sealed), the code runner and the log. WorkerDeps satisfies it.
 */
export interface ActionRunDeps {
  items: Collection<ItemDoc>;
  secrets: SecretBox;
  runner: CodeRunner;
  logger: Logger;
  clock: Clock;
  /** A task's hooks run on behalf of a user: VIEW on the action and its connection is checked as they run. */
  access: Pick<AccessControl, 'principals' | 'can' | 'principalOf'>;
  /** Memory and output caps of a run; its time limit comes from `action_timeout_seconds`. */
  limits: Pick<RunLimits, 'memoryMb' | 'maxOutputBytes'>;
}

export type ActionRunOutcome =
  | { ok: true; result: unknown; startedAt: Date; endedAt: Date }
  | { ok: false; kind: 'error' | 'timeout' | 'invalid'; message: string; startedAt: Date; endedAt: Date };

export interface ActionExecution {
  action: ItemDoc;
  /** Already opened (decrypted) connection content, or null. */
  connection: unknown;
  /**
   * The user the run acts as (the request's, a hook's run user): with the action, whose reuse
   * process it may have (null: none, a fresh process).
   */
  actorLaui: Laui | null;
  actionVariables: Record<string, unknown>;
  /** What the action's `run` receives as its third argument; session_id is added. */
  context: Record<string, unknown>;
  sessionId: string;
  timeoutSeconds: number;
  /** Extra fields of the run's log line (task_laui, action_type, ...). */
  logFields?: Record<string, unknown>;
}

/** `connection item not found: <laui>`, the wording of the task validation (spec 4.2). */
export const connectionNotFound = (laui: unknown): string => `connection item not found: ${String(laui)}`;

export const isConnectionItem = (doc: ItemDoc): boolean => resolveItemType(doc.item_type)?.base === 'connection';

/** A live connection item, or null when the LAUI is malformed, unknown, deleted or not a connection. */
export const loadConnection = async (items: Collection<ItemDoc>, laui: unknown): Promise<ItemDoc | null> => {
  if (!isLaui(laui)) return null;
  const doc = await items.get(laui);
  return doc && !doc.is_deleted && isConnectionItem(doc) ? doc : null;
};

/** The connection's content as the action code sees it: opened when sealed. */
export const openConnection = (connection: ItemDoc | null, secrets: SecretBox): unknown =>
  connection === null ? null : openSecretField(connection.content ?? {}, secrets);


/**
 * Runs one action through the code runner with the action's codeblock and bashblock, and logs the
 * run under its session_id (category TASK, step `action`): the code's output line by line, then
 * the run's end line (`session_end: true`). Never throws for what the code does: a timeout, an
 * exception, invalid code or a non-JSON return value come back as `ok: false`.
 */
export const executeAction = async (deps: ActionRunDeps, run: ActionExecution): Promise<ActionRunOutcome> => {
  const { action, sessionId, timeoutSeconds } = run;
  const startedAt = deps.clock.now();
  // Every line of an action's run is under the step `action` (what the code was doing, load or
  // run, is all one step of the task's hooks or of /action/run).
  const session = runSessionLog(deps.logger, sessionId, { action_laui: action.laui, action_name: action.name, ...run.logFields }, { category: 'TASK', step: () => 'action' });
  const outcome = await deps.runner
    .runAction({
      codeblock: normaliseCodeBlock(action.codeblock),
      bashblock: installStep(action.bashblock),
      connection: run.connection,
      actionVariables: run.actionVariables,
      context: { ...run.context, session_id: sessionId },
      limits: { ...deps.limits, timeoutMs: timeoutSeconds * 1000 },
      // Actions opt into process reuse like operators (docs/decisions.md, Code runner): a process of
      // this action and this user only.
      reuse: action.reuse_process === true,
      reuseScope: run.actorLaui === null ? null : { itemLaui: action.laui, actorLaui: run.actorLaui },
      output: session.output(() => secretStringsOf(run.connection)),
    })
    .catch((error: unknown) => ({
      ok: false as const,
      kind: 'error' as const,
      message: `runner error: ${error instanceof Error ? error.message : String(error)}`,
      logs: '',
      logsTruncated: false,
    }));
  const endedAt = deps.clock.now();
  const durationSeconds = (endedAt.getTime() - startedAt.getTime()) / 1000;
  // The output is in the session's lines above it: the end line no longer repeats it.
  const base = { category: 'TASK' as const, step: 'action', duration_seconds: durationSeconds };
  if (outcome.ok) {
    session.end({ ...base, level: 'info', status: 'success', message: `Action ${action.name} returned after ${durationSeconds} s` });
    return { ok: true, result: outcome.result, startedAt, endedAt };
  }
  const message = outcome.kind === 'timeout' ? `action timed out after ${timeoutSeconds} s` : outcome.message;
  session.end({ ...base, level: 'error', status: outcome.kind, message: `Action ${action.name} failed: ${message}` });
  return { ok: false, kind: outcome.kind, message, startedAt, endedAt };
};
