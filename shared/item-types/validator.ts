import { Ajv, type ValidateFunction } from 'ajv';
import { resolveItemType } from './definitions.ts';
import { entryFromAjvError, unknownItemTypeEntry } from './entries.ts';
import { DATETIME_FORMAT, type JsonSchema } from './schemas/common.ts';
import type { CatalogValidationEntry } from './types.ts';

/**
 * Item validation with ajv. Each distinct schema is compiled once per mode (create: with its
 * `required`; update: without) and cached; a call does one lookup and one compiled check.
 * The validator never mutates the body (no ajv defaults or coercion; defaults are applyDefaults').
 */

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, coerceTypes: false, useDefaults: false });

const ISO_DATETIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:[Zz]|[+-](\d{2})(?::?(\d{2}))?)?)?$/;
const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** ISO 8601 date or date-time, offset optional (naive values are UTC), with calendar checks. */
export const isIsoDatetime = (value: string): boolean => {
  const match = ISO_DATETIME.exec(value);
  if (match === null) return false;
  const [, year, month, day, hour, minute, second, offsetHour, offsetMinute] = match.map((part) => (part === undefined ? undefined : Number(part)));
  if (month === undefined || day === undefined || year === undefined) return false;
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > (month === 2 && !leap ? 28 : (DAYS_IN_MONTH[month - 1] ?? 0))) return false;
  if (hour !== undefined && hour > 23) return false;
  if (minute !== undefined && minute > 59) return false;
  if (second !== undefined && second > 59) return false;
  if (offsetHour !== undefined && offsetHour > 23) return false;
  return offsetMinute === undefined || offsetMinute <= 59;
};

ajv.addFormat(DATETIME_FORMAT, { type: 'string', validate: isIsoDatetime });

interface Compiled {
  create: ValidateFunction;
  createSchema: JsonSchema;
  update: ValidateFunction;
  updateSchema: JsonSchema;
}

const bySchema = new WeakMap<object, Compiled>();
const byText = new Map<string, Compiled>();
let compilations = 0;

/** Number of schemas compiled so far (each compile builds both modes); for tests and diagnostics. */
export const compiledSchemaCount = (): number => compilations;

const compiledFor = (schema: JsonSchema): Compiled => {
  const known = bySchema.get(schema);
  if (known !== undefined) return known;
  const text = JSON.stringify(schema);
  let compiled = byText.get(text);
  if (compiled === undefined) {
    const { required: _required, ...updateSchema } = schema;
    compiled = { create: ajv.compile(schema), createSchema: schema, update: ajv.compile(updateSchema), updateSchema };
    compilations += 1;
    byText.set(text, compiled);
  }
  bySchema.set(schema, compiled);
  return compiled;
};

const locKey = (entry: CatalogValidationEntry): string => JSON.stringify(entry.loc);
const PARENT_LOC = JSON.stringify(['body', 'parent_laui']);

/**
 * [] when valid. Create mode: the type's required fields, field types, patterns and formats; the
 * parent_laui / is_root combination and parent_laui's format are left to checkRootRules (callers
 * run both, so the two never report the same entry). Update mode: only the fields present are
 * checked, parent_laui included. At most one entry per location (the first found), as pydantic reports.
 */
export function validateItem(itemType: string, body: Record<string, unknown>, mode: 'create' | 'update'): CatalogValidationEntry[] {
  const definition = resolveItemType(itemType);
  if (definition === null) return [unknownItemTypeEntry(itemType)];
  const compiled = compiledFor(definition.schema);
  const validate = mode === 'create' ? compiled.create : compiled.update;
  if (validate(body)) return [];
  const root = mode === 'create' ? compiled.createSchema : compiled.updateSchema;
  const seen = new Set<string>(mode === 'create' ? [PARENT_LOC] : []);
  const entries: CatalogValidationEntry[] = [];
  for (const error of validate.errors ?? []) {
    const entry = entryFromAjvError(error, root, body);
    const key = locKey(entry);
    if (seen.has(key)) continue;
    seen.add(key);
    entries.push(entry);
  }
  return entries;
}
