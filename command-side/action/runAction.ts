import { AppError, forbidden, notFound, unprocessable } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import { isLaui, newSessionId } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import { checkRootRules, OBJECT_ID_PATTERN, resolveItemType, validateItem } from '../../shared/item-types/itemTypes.ts';
import type { CatalogValidationEntry } from '../../shared/item-types/types.ts';
import { renderTemplates, templateVariables } from '../../shared/task/templating.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { createItem } from '../catalog/createItem.ts';
import { NO_RUNNABLE_CODE, runnableCodeBlock } from './codeBlocks.ts';
import type { CatalogDeps } from '../catalog/catalogDeps.ts';
import { loadSystemSettings } from '../../shared/task/loadSystemSettings.ts';
import { connectionNotFound, executeAction, loadConnection, openConnection, type ActionRunDeps } from './executeAction.ts';

export const ITEM_TYPE_MUST_BE_ACTION = "Request item_type must be 'action'";
export const ONLY_ACTION = 'Only Action can be executed';

/** Spec 4.4: all required when no item_laui is given. */
export const NEW_ACTION_REQUIRED = ['name', 'parent_laui', 'project_laui', 'account_laui', 'codeblock', 'bashblock'] as const;

export type RunActionDeps = CatalogDeps & ActionRunDeps;

export interface RunActionOutcome {
  result: unknown;
  actionLaui: string;
  sessionId: string;
  /** Position of the new action's creation, or null when an existing action ran. */
  position: Position | null;
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const given = (value: unknown): boolean => value !== undefined && value !== null;

/** The 422 object of a schema failure: a summary line plus the entries POST /catalog/create would give. */
export const actionValidationFailure = (entries: CatalogValidationEntry[], body: Record<string, unknown>): AppError => {
  const problems = entries.map((entry) => `${entry.loc.filter((segment) => segment !== 'body').join('.') || 'body'}: ${entry.msg}`);
  return unprocessable({
    summary: `Action validation failed with ${entries.length} error${entries.length === 1 ? '' : 's'}: ${problems.join('; ')}`,
    validation_context: {
      item_type: 'action',
      operation: 'create',
      name: typeof body.name === 'string' ? body.name : null,
      required_fields: [...NEW_ACTION_REQUIRED],
      errors: entries,
    },
  });
};

const expectedFormatOf = (field: string): CatalogValidationEntry['expected_format'] => {
  const schema = ((resolveItemType('action')?.schema.properties ?? {}) as Record<string, { type?: unknown; pattern?: unknown }>)[field] ?? {};
  const pattern = typeof schema.pattern === 'string' ? schema.pattern : null;
  const datatype = pattern === OBJECT_ID_PATTERN ? 'ObjectId' : typeof schema.type === 'string' ? schema.type : 'any';
  return { name: field, datatype, required: true, regex: pattern };
};

/**
 * Every schema problem of a new action, in the catalog's entry form: the catalog's own checks
 * (root rules, the action schema) plus the fields the action endpoint requires and a codeblock that
 * cannot run (no language python/javascript, or no code under `code`/`content`). One entry per location.
 */
export const newActionEntries = (body: Record<string, unknown>): CatalogValidationEntry[] => {
  const entries = [...checkRootRules(body), ...validateItem('action', body, 'create')];
  const taken = new Set(entries.map((entry) => JSON.stringify(entry.loc)));
  const add = (entry: CatalogValidationEntry) => {
    const key = JSON.stringify(entry.loc);
    if (taken.has(key)) return;
    taken.add(key);
    entries.push(entry);
  };
  for (const field of NEW_ACTION_REQUIRED) {
    if (!given(body[field])) add({ type: 'missing', loc: ['body', field], msg: 'Field required', input: null, expected_format: expectedFormatOf(field) });
  }
  if (isObject(body.codeblock) && runnableCodeBlock(body.codeblock) === null) {
    add({
      type: 'value_error',
      loc: ['body', 'codeblock'],
      msg: NO_RUNNABLE_CODE,
      input: body.codeblock,
      expected_format: expectedFormatOf('codeblock'),
    });
  }
  return entries;
};

const invalidLaui = (field: string, input: unknown) =>
  unprocessable([{ type: 'value_error', loc: ['body', field], msg: 'Invalid ObjectId', input }]);

/**
 * POST /action/run (spec 4.4): runs an existing action (EDIT on it), or creates a new one through
 * the catalog pipeline (EDIT on its parent, schema, hierarchy, unique name) and runs it. Answers
 * with what the action's `run` returned; any failure of the code is a 500 with its message.
 */
export const runAction = async (
  deps: RunActionDeps,
  principal: Principal,
  body: Record<string, unknown>,
  metadata: EventMetadata,
  settle: (position: Position | null) => Promise<void>,
): Promise<RunActionOutcome> => {
  if (body.item_type !== 'action') throw unprocessable(ITEM_TYPE_MUST_BE_ACTION);
  if (given(body.action_variables) && !isObject(body.action_variables)) {
    throw unprocessable([{ type: 'dict_type', loc: ['body', 'action_variables'], msg: 'Input should be a valid dictionary', input: body.action_variables }]);
  }
  if (given(body.connection_laui) && !isLaui(body.connection_laui)) throw invalidLaui('connection_laui', body.connection_laui);

  let existing: ItemDoc | null = null;
  if (given(body.item_laui)) {
    if (!isLaui(body.item_laui)) throw invalidLaui('item_laui', body.item_laui);
    const found = await deps.items.get(body.item_laui);
    if (!found || found.is_deleted) throw notFound('Item not found');
    if (found.item_type !== 'action') throw unprocessable(ONLY_ACTION);
    // Running code is a write-level act (it may touch the connection's target): EDIT, as for tasks.
    if (!(await deps.access.can(principal, found, 'EDIT'))) throw forbidden();
    if (runnableCodeBlock(found.codeblock) === null) throw unprocessable(`Action ${found.name} cannot be run: ${NO_RUNNABLE_CODE}`);
    existing = found;
  } else {
    const entries = newActionEntries(body);
    if (entries.length > 0) throw actionValidationFailure(entries, body);
  }

  // The request's connection, else the one stored on the action. Its credentials reach code the
  // caller may have written, so the caller must be able to VIEW the connection.
  const connectionLaui = given(body.connection_laui) ? body.connection_laui : (existing?.connection_laui ?? null);
  let connection: ItemDoc | null = null;
  if (given(connectionLaui)) {
    connection = await loadConnection(deps.items, connectionLaui);
    if (connection === null) throw unprocessable(connectionNotFound(connectionLaui));
    if (!(await deps.access.can(principal, connection, 'VIEW'))) throw forbidden();
  }

  let action: ItemDoc;
  let position: Position | null = null;
  if (existing) {
    action = existing;
  } else {
    const { item_laui: _ignored, ...fields } = body;
    let created: Awaited<ReturnType<typeof createItem>>;
    try {
      created = await createItem(deps, principal, { ...fields, item_type: 'action' }, metadata);
    } catch (error) {
      if (error instanceof AppError && error.status === 422 && Array.isArray(error.detail)) {
        throw actionValidationFailure(error.detail as CatalogValidationEntry[], body);
      }
      throw error;
    }
    position = created.position;
    await settle(position);
    const doc = await deps.items.get(created.laui);
    if (!doc) throw new Error(`action ${created.laui} is not visible after creation`);
    action = doc;
  }

  const settings = await loadSystemSettings(deps);
  const timeoutSeconds = settings.action_timeout_seconds;
  const now = deps.clock.now();
  const variables = templateVariables(body, null, now);
  const rawVariables = isObject(body.action_variables) ? body.action_variables : isObject(action.action_variables) ? action.action_variables : {};
  const sessionId = newSessionId();
  const outcome = await executeAction(deps, {
    action,
    connection: openConnection(connection, deps.secrets),
    actorLaui: principal.laui,
    actionVariables: renderTemplates(rawVariables, variables),
    context: { action_laui: action.laui, action_name: action.name, user_laui: principal.laui },
    sessionId,
    timeoutSeconds,
    logFields: { user_laui: principal.laui, correlation_id: metadata.correlation_id },
  });
  if (!outcome.ok) throw new AppError(500, `Internal server error: ${outcome.message}`);
  return { result: outcome.result, actionLaui: action.laui, sessionId, position };
};
