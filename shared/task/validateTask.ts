import { ADHOC, isValidFrequency } from './cron.ts';
import { toInstant } from './dates.ts';
import type { ConnectionOperatorMapping } from './systemSettings.ts';
import { quoted } from '../validation/boundedDetail.ts';
import { DATES_REQUIRED_DETAIL, END_BEFORE_START_DETAIL, INVALID_CRON_PREFIX } from './scheduleDetails.ts';

export { DATES_REQUIRED_DETAIL, END_BEFORE_START_DETAIL };

/**
 * Task validation before a run (spec 4.2 Execution rules 2-5 and the 422 rows of POST /task/run).
 * Pure: the caller looks up the referenced items (see `referencedItems`) and passes the results.
 * Checks run in the spec's order and the first failing check gives the 422 detail:
 * item_type, frequency, dates, connection-operator mapping, referenced items.
 */

export const ONLY_TASKS_DETAIL = 'only tasks can be executed';

export const invalidCronDetail = (value: unknown): string => `${INVALID_CRON_PREFIX}${quoted(value)}`;

export const mappingDetail = (connectionSubtype: string, operatorSubtype: string, allowed: readonly string[]): string =>
  `connection subtype ${connectionSubtype} does not support operator subtype ${operatorSubtype}; ` +
  `allowed operator types: ${allowed.length === 0 ? 'none' : allowed.join(', ')}`;

export type ReferenceKind = 'operator' | 'connection' | 'payload' | 'config' | 'action' | 'workflow';

export const itemNotFoundEntry = (kind: ReferenceKind, laui: string): string => `${kind} item not found: ${laui}`;

/** What the lookup found for a LAUI; null (or no entry) means not found. */
export type ReferencedItem = { item_type: string; deleted: boolean } | null;
export type ItemLookup = ReadonlyMap<string, ReferencedItem>;

export interface TaskToValidate {
  item_type?: unknown;
  frequency?: unknown;
  start_date?: unknown;
  end_date?: unknown;
  parent_laui?: unknown;
  operator_laui?: unknown;
  connection_laui?: unknown;
  payload_laui?: unknown;
  attached_config_lauis?: unknown;
  actions?: unknown;
}

export interface ValidationContext {
  enforce_connection_operator_mapping: boolean;
  connection_operator_mapping: ConnectionOperatorMapping;
  items: ItemLookup;
}

export type TaskValidation = { ok: true } | { ok: false; status: 422; detail: string };

const ACTION_LISTS = ['create_actions', 'pre_actions', 'running_actions', 'post_actions'] as const;

const KIND_TYPES: Record<ReferenceKind, (itemType: string) => boolean> = {
  operator: (type) => type === 'operator' || type.startsWith('operator.'),
  connection: (type) => type === 'connection' || type.startsWith('connection.'),
  payload: (type) => type === 'payload',
  config: (type) => type === 'config',
  action: (type) => type === 'action',
  workflow: (type) => type === 'folder.workflow',
};

const isLauiValue = (value: unknown): value is string => typeof value === 'string' && value !== '';

/**
 * The items a task references, in check order: operator, connection, payload, attached configs (array
 * order), actions (create, pre, running, post; list order), parent workflow. Duplicates are listed once.
 */
export function referencedItems(task: TaskToValidate): Array<{ kind: ReferenceKind; laui: string }> {
  const out: Array<{ kind: ReferenceKind; laui: string }> = [];
  const seen = new Set<string>();
  const add = (kind: ReferenceKind, laui: unknown): void => {
    if (!isLauiValue(laui) || seen.has(`${kind}:${laui}`)) return;
    seen.add(`${kind}:${laui}`);
    out.push({ kind, laui });
  };
  add('operator', task.operator_laui);
  add('connection', task.connection_laui);
  add('payload', task.payload_laui);
  if (Array.isArray(task.attached_config_lauis)) for (const laui of task.attached_config_lauis) add('config', laui);
  const actions = task.actions;
  if (actions !== null && typeof actions === 'object' && !Array.isArray(actions)) {
    for (const list of ACTION_LISTS) {
      const refs = (actions as Record<string, unknown>)[list];
      if (!Array.isArray(refs)) continue;
      for (const ref of refs) {
        if (ref !== null && typeof ref === 'object') add('action', (ref as Record<string, unknown>).laui);
      }
    }
  }
  add('workflow', task.parent_laui);
  return out;
}

/** A referenced item is usable when it was found, is not deleted and has the kind's item type. */
export function isUsableReference(kind: ReferenceKind, item: ReferencedItem | undefined): boolean {
  return item !== undefined && item !== null && !item.deleted && KIND_TYPES[kind](item.item_type);
}

/** `; `-joined `<kind> item not found: <laui>` entries, or null when every reference is usable. */
export function missingReferencesDetail(task: TaskToValidate, items: ItemLookup): string | null {
  const missing = referencedItems(task)
    .filter(({ kind, laui }) => !isUsableReference(kind, items.get(laui)))
    .map(({ kind, laui }) => itemNotFoundEntry(kind, laui));
  return missing.length === 0 ? null : missing.join('; ');
}

/** The subtype of an item type: the part after the first dot; a type without a dot is its own subtype. */
export function itemSubtype(itemType: string): string {
  const dot = itemType.indexOf('.');
  return dot < 0 ? itemType : itemType.slice(dot + 1);
}

/**
 * Spec 4.2 rule 5 (the caller checks the enforce flag): the operator subtypes a connection subtype
 * supports are `mapping[subtype]`, else `mapping['*']`, else none; an allowed entry `*` accepts any.
 * Returns the 422 detail, or null when the pair is supported.
 */
export function connectionOperatorMappingError(
  connectionItemType: string,
  operatorItemType: string,
  mapping: ConnectionOperatorMapping,
): string | null {
  const connectionSubtype = itemSubtype(connectionItemType);
  const operatorSubtype = itemSubtype(operatorItemType);
  const allowed = Object.hasOwn(mapping, connectionSubtype)
    ? (mapping[connectionSubtype] as string[])
    : Object.hasOwn(mapping, '*')
      ? (mapping['*'] as string[])
      : [];
  if (allowed.includes('*') || allowed.includes(operatorSubtype)) return null;
  return mappingDetail(connectionSubtype, operatorSubtype, allowed);
}

const fail = (detail: string): TaskValidation => ({ ok: false, status: 422, detail });

/**
 * Spec 4.2 rules 3 and 4, the one schedule check of every path that writes or runs a task (catalog
 * create, update and validate, POST /task/run, the scheduler) and of diagnose: ADHOC (the default)
 * or a 5-field frequency cron-parser accepts, and for a scheduled task both dates with
 * end_date >= start_date. The 422 detail, or null when the schedule can run.
 */
export function scheduleProblem(task: Pick<TaskToValidate, 'frequency' | 'start_date' | 'end_date'>): string | null {
  const frequency = task.frequency === undefined || task.frequency === null ? ADHOC : task.frequency;
  if (!isValidFrequency(frequency)) return invalidCronDetail(frequency);
  if (frequency === ADHOC) return null;
  const start = toInstant(task.start_date);
  const end = toInstant(task.end_date);
  if (start === null || end === null) return DATES_REQUIRED_DETAIL;
  return end.getTime() < start.getTime() ? END_BEFORE_START_DETAIL : null;
}

export function validateTask(task: TaskToValidate, context: ValidationContext): TaskValidation {
  if (task.item_type !== undefined && task.item_type !== 'task') return fail(ONLY_TASKS_DETAIL);

  const schedule = scheduleProblem(task);
  if (schedule !== null) return fail(schedule);

  if (context.enforce_connection_operator_mapping) {
    const operator = isLauiValue(task.operator_laui) ? context.items.get(task.operator_laui) : undefined;
    const connection = isLauiValue(task.connection_laui) ? context.items.get(task.connection_laui) : undefined;
    // A missing pair cannot be checked here: the referenced-items check reports it.
    if (isUsableReference('operator', operator) && isUsableReference('connection', connection)) {
      const error = connectionOperatorMappingError(
        (connection as NonNullable<ReferencedItem>).item_type,
        (operator as NonNullable<ReferencedItem>).item_type,
        context.connection_operator_mapping,
      );
      if (error !== null) return fail(error);
    }
  }

  const missing = missingReferencesDetail(task, context.items);
  return missing === null ? { ok: true } : fail(missing);
}
