import { toInstant } from './dates.ts';

/**
 * Payload and action-variable templating (spec 4.2 Execution rule 9). Pure: `now` is an argument.
 *
 * - A placeholder is `{{name}}` with optional spaces inside the braces (`{{ ds }}`); a name is letters,
 *   digits, `_`, `.` and `-`, looked up as a literal key (no path traversal).
 * - Variables, lowest to highest precedence: task fields (all but description, actions, payload and
 *   config), merged `config.parameters`, builtins (builtin wins).
 * - Every string inside the value is rendered, at any depth of objects and arrays; object keys and
 *   non-string leaves are kept. Inputs are not mutated.
 * - Substitution is textual and the result is always a string: a string value is inserted as-is, a
 *   Date as its ISO string, any other value (number, boolean, null, object, array) as its JSON text.
 *   So `"{{ iteration }}"` becomes `"3"`, never the number 3.
 * - A name that is not a variable (or whose value is `undefined`) leaves the placeholder unchanged,
 *   spaces included.
 * - One pass: inserted text is not rendered again (a parameter holding `{{ x }}` stays literal).
 *
 * Builtins are computed from logical_date, or from now when it is null/unparsable:
 *   ds `%Y-%m-%d`, ds_nodash `%Y%m%d`, ts ISO 8601 with `+00:00` (Python isoformat: `.ffffff` only
 *   when the fraction is non-zero), ts_nodash_with_tz `%Y%m%dT%H%M%S+0000`, ts_nodash `%Y%m%dT%H%M%S`;
 *   from now, always: current_date `%Y-%m-%d`, current_timestamp ISO 8601 with microseconds and `+00:00`.
 *   JavaScript dates hold milliseconds, so microseconds end in `000`.
 */

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;

export const TEMPLATE_EXCLUDED_TASK_FIELDS: readonly string[] = ['description', 'actions', 'payload', 'config'];

export const BUILTIN_VARIABLE_NAMES = [
  'ds',
  'ds_nodash',
  'ts',
  'ts_nodash_with_tz',
  'ts_nodash',
  'current_date',
  'current_timestamp',
] as const;

export type BuiltinVariables = Record<(typeof BUILTIN_VARIABLE_NAMES)[number], string>;

const pad = (value: number, width = 2): string => String(value).padStart(width, '0');

const datePart = (date: Date, separator: string): string =>
  [pad(date.getUTCFullYear(), 4), pad(date.getUTCMonth() + 1), pad(date.getUTCDate())].join(separator);

const timePart = (date: Date, separator: string): string =>
  [pad(date.getUTCHours()), pad(date.getUTCMinutes()), pad(date.getUTCSeconds())].join(separator);

const micros = (date: Date): string => `${pad(date.getUTCMilliseconds(), 3)}000`;

export function builtinVariables(logicalDate: unknown, now: Date): BuiltinVariables {
  const at = toInstant(logicalDate) ?? now;
  const fraction = at.getUTCMilliseconds() === 0 ? '' : `.${micros(at)}`;
  return {
    ds: datePart(at, '-'),
    ds_nodash: datePart(at, ''),
    ts: `${datePart(at, '-')}T${timePart(at, ':')}${fraction}+00:00`,
    ts_nodash_with_tz: `${datePart(at, '')}T${timePart(at, '')}+0000`,
    ts_nodash: `${datePart(at, '')}T${timePart(at, '')}`,
    current_date: datePart(now, '-'),
    current_timestamp: `${datePart(now, '-')}T${timePart(now, ':')}.${micros(now)}+00:00`,
  };
}

/** The variables of a task run: task fields < merged parameters < builtins. */
export function templateVariables(
  task: Readonly<Record<string, unknown>>,
  parameters: Readonly<Record<string, unknown>> | null | undefined,
  now: Date,
): Record<string, unknown> {
  const variables: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(task)) {
    if (!TEMPLATE_EXCLUDED_TASK_FIELDS.includes(key)) variables[key] = value;
  }
  if (parameters !== null && parameters !== undefined) Object.assign(variables, parameters);
  Object.assign(variables, builtinVariables(task.logical_date, now));
  return variables;
}

function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value instanceof Date) return value.toISOString();
  return JSON.stringify(value) ?? String(value);
}

export function renderString(template: string, variables: Readonly<Record<string, unknown>>): string {
  return template.replace(PLACEHOLDER, (placeholder, name: string) =>
    Object.hasOwn(variables, name) && variables[name] !== undefined ? asText(variables[name]) : placeholder,
  );
}

/** A placeholder anywhere (the same pattern, without the global flag's lastIndex). */
const HAS_PLACEHOLDER = new RegExp(PLACEHOLDER.source);

/**
 * Whether any string in the value, at any depth, holds a placeholder. Without one, the value
 * renders as itself whatever the variables are (its rendering equals the value), so
 * a caller need not gather them: a run's task fields, merged parameters and builtins, per run.
 */
export function hasPlaceholder(value: unknown): boolean {
  if (typeof value === 'string') return HAS_PLACEHOLDER.test(value);
  if (Array.isArray(value)) return value.some(hasPlaceholder);
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    for (const key in value) if (Object.hasOwn(value, key) && hasPlaceholder((value as Record<string, unknown>)[key])) return true;
  }
  return false;
}

/** Render every string inside a JSON-like value (payload or action_variables). */
export function renderTemplates<T>(value: T, variables: Readonly<Record<string, unknown>>): T {
  return renderAny(value, variables) as T;
}

function renderAny(value: unknown, variables: Readonly<Record<string, unknown>>): unknown {
  if (typeof value === 'string') return renderString(value, variables);
  if (Array.isArray(value)) return value.map((entry) => renderAny(entry, variables));
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value).map(([key, entry]) => [key, renderAny(entry, variables)]));
  }
  return value;
}
