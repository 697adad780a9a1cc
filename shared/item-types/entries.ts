import type { ErrorObject } from 'ajv';
import { ALIASES, listItemTypes } from './definitions.ts';
import { DATETIME_FORMAT, OBJECT_ID_PATTERN, type JsonSchema } from './schemas/common.ts';
import type { CatalogValidationEntry, ExpectedFormat } from './types.ts';

/**
 * Turns ajv errors into the 422 entries of POST /catalog/create (spec 4.3): pydantic-style
 * `{type, loc, msg, input}` plus `expected_format {name, datatype, required, regex}` describing the field.
 * Also the parent_laui / is_root rules and the unknown item_type entry.
 *
 * Stable entry types: missing, string_type, int_type, float_type, bool_type, dict_type, list_type,
 * string_pattern_mismatch, string_too_short, greater_than_equal, enum, datetime_parsing,
 * extra_forbidden, value_error (Invalid ObjectId / parent_laui with is_root), rules.
 */

export const INVALID_OBJECT_ID = 'Invalid ObjectId';
export const ROOT_RULES_MSG = 'parent_laui is required unless is_root is true; is_root true forbids parent_laui';
const OBJECT_ID_REGEX = new RegExp(OBJECT_ID_PATTERN);

type Segment = string | number;

const asSchema = (value: unknown): JsonSchema | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonSchema) : undefined;

/** The schema of the field at `path` and whether its containing object requires it. */
const fieldAt = (root: JsonSchema, path: readonly Segment[]): { schema: JsonSchema | undefined; required: boolean } => {
  let schema: JsonSchema | undefined = root;
  let required = false;
  for (const segment of path) {
    if (schema === undefined) return { schema: undefined, required: false };
    if (typeof segment === 'number') {
      schema = asSchema(schema.items);
      required = false;
      continue;
    }
    const properties = asSchema(schema.properties);
    const declared = properties !== undefined && Object.hasOwn(properties, segment) ? asSchema(properties[segment]) : undefined;
    required = Array.isArray(schema.required) && (schema.required as unknown[]).includes(segment);
    schema = declared ?? asSchema(schema.additionalProperties);
  }
  return { schema, required };
};

const isObjectIdSchema = (schema: JsonSchema | undefined): boolean => schema?.pattern === OBJECT_ID_PATTERN;

const datatypeOf = (schema: JsonSchema | undefined): string => {
  if (schema === undefined) return 'any';
  if (isObjectIdSchema(schema)) return 'ObjectId';
  if (schema.format === DATETIME_FORMAT) return 'datetime';
  const types = (Array.isArray(schema.type) ? (schema.type as string[]) : typeof schema.type === 'string' ? [schema.type] : []).filter(
    (type) => type !== 'null',
  );
  return types.length === 0 ? 'any' : types.join(' | ');
};

const expectedFormat = (root: JsonSchema, path: readonly Segment[]): ExpectedFormat => {
  const { schema, required } = fieldAt(root, path);
  return {
    name: path.join('.'),
    datatype: datatypeOf(schema),
    required,
    regex: typeof schema?.pattern === 'string' ? schema.pattern : null,
  };
};

const valueAt = (root: unknown, path: readonly Segment[]): unknown =>
  path.reduce<unknown>(
    (value, key) => (value !== null && typeof value === 'object' ? (value as Record<Segment, unknown>)[key] : undefined),
    root,
  );

const parsePath = (instancePath: string): Segment[] =>
  instancePath
    .split('/')
    .filter((segment) => segment !== '')
    .map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment.replace(/~1/g, '/').replace(/~0/g, '~')));

const TYPE_ENTRIES: Record<string, [string, string]> = {
  string: ['string_type', 'Input should be a valid string'],
  integer: ['int_type', 'Input should be a valid integer'],
  number: ['float_type', 'Input should be a valid number'],
  boolean: ['bool_type', 'Input should be a valid boolean'],
  object: ['dict_type', 'Input should be a valid dictionary'],
  array: ['list_type', 'Input should be a valid list'],
};

const quote = (value: unknown): string => (typeof value === 'string' ? `'${value}'` : String(value));
const orList = (values: readonly string[]): string =>
  values.length > 1 ? `${values.slice(0, -1).join(', ')} or ${values.at(-1)}` : (values[0] ?? '');

/** One entry per ajv error; `root` is the schema that was validated (create or update variant). */
export function entryFromAjvError(error: ErrorObject, root: JsonSchema, body: unknown): CatalogValidationEntry {
  const params = error.params as Record<string, unknown>;
  const path = parsePath(error.instancePath);
  if (error.keyword === 'required') {
    const field = [...path, String(params.missingProperty)];
    return { type: 'missing', loc: ['body', ...field], msg: 'Field required', input: null, expected_format: expectedFormat(root, field) };
  }
  if (error.keyword === 'additionalProperties') {
    const field = [...path, String(params.additionalProperty)];
    return {
      type: 'extra_forbidden',
      loc: ['body', ...field],
      msg: 'Extra inputs are not permitted',
      input: valueAt(body, field) ?? null,
      expected_format: { name: field.join('.'), datatype: null, required: false, regex: null },
    };
  }
  const loc: Segment[] = ['body', ...path];
  const input = valueAt(body, path) ?? null;
  const format = expectedFormat(root, path);
  const entry = (type: string, msg: string, ctx?: Record<string, unknown>): CatalogValidationEntry =>
    ctx === undefined ? { type, loc, msg, input, expected_format: format } : { type, loc, msg, input, expected_format: format, ctx };

  if ((error.keyword === 'type' || error.keyword === 'pattern') && format.datatype === 'ObjectId') {
    return entry('value_error', INVALID_OBJECT_ID);
  }
  switch (error.keyword) {
    case 'type': {
      const wanted = String(params.type)
        .split(',')
        .find((type) => type !== 'null') ?? 'null';
      const [type, msg] = TYPE_ENTRIES[wanted] ?? ['type_error', `Input should be of type ${wanted}`];
      return entry(type, msg);
    }
    case 'pattern':
      return entry('string_pattern_mismatch', `String should match pattern '${String(params.pattern)}'`, { pattern: params.pattern });
    case 'minLength': {
      const limit = Number(params.limit);
      return entry('string_too_short', `String should have at least ${limit} character${limit === 1 ? '' : 's'}`, { min_length: limit });
    }
    case 'minimum':
      return entry('greater_than_equal', `Input should be greater than or equal to ${String(params.limit)}`, { ge: params.limit });
    case 'enum': {
      const expected = orList((params.allowedValues as unknown[]).filter((value) => value !== null).map(quote));
      return entry('enum', `Input should be ${expected}`, { expected });
    }
    case 'format':
      return params.format === DATETIME_FORMAT
        ? entry('datetime_parsing', 'Input should be a valid datetime')
        : entry('value_error', `Input should match format '${String(params.format)}'`);
    default:
      return entry(error.keyword, error.message ?? 'Invalid value');
  }
}

/** The explanatory entry that accompanies every parent_laui / is_root problem. */
export function rulesEntry(body: Record<string, unknown>): CatalogValidationEntry {
  return {
    type: 'rules',
    loc: ['body'],
    msg: ROOT_RULES_MSG,
    input: { parent_laui: body.parent_laui ?? null, is_root: body.is_root ?? false },
  };
}

const parentFormat = (required: boolean): ExpectedFormat => ({
  name: 'parent_laui',
  datatype: 'ObjectId',
  required,
  regex: OBJECT_ID_PATTERN,
});

/**
 * [] when (is_root true and no parent_laui) or (is_root false/absent and a valid parent_laui);
 * otherwise the problem entry for parent_laui followed by the rules entry. A null parent_laui counts as absent.
 */
export function checkRootRules(body: Record<string, unknown>): CatalogValidationEntry[] {
  const isRoot = body.is_root === true;
  const parent = body.parent_laui;
  const hasParent = parent !== undefined && parent !== null;
  if (isRoot && !hasParent) return [];
  if (!isRoot && typeof parent === 'string' && OBJECT_ID_REGEX.test(parent)) return [];
  let problem: CatalogValidationEntry;
  if (isRoot) {
    problem = {
      type: 'value_error',
      loc: ['body', 'parent_laui'],
      msg: 'parent_laui must not be sent when is_root is true',
      input: parent,
      expected_format: parentFormat(false),
    };
  } else if (!hasParent) {
    problem = { type: 'missing', loc: ['body', 'parent_laui'], msg: 'Field required', input: null, expected_format: parentFormat(true) };
  } else {
    problem = { type: 'value_error', loc: ['body', 'parent_laui'], msg: INVALID_OBJECT_ID, input: parent, expected_format: parentFormat(true) };
  }
  return [problem, rulesEntry(body)];
}

let supportedCache: string[] | null = null;
/** Registered item types followed by the accepted aliases. */
export const supportedItemTypes = (): string[] => [
  ...(supportedCache ??= [...listItemTypes().map((definition) => definition.type), ...Object.keys(ALIASES)]),
];

const ITEM_TYPE_FORMAT: ExpectedFormat = { name: 'item_type', datatype: 'string', required: true, regex: null };

/**
 * The entry for an item_type the registry does not know: `enum` with the supported types in
 * `ctx.expected` (a list); `missing` when absent, `string_type` when not a string.
 */
export function unknownItemTypeEntry(itemType: unknown): CatalogValidationEntry {
  const loc = ['body', 'item_type'];
  if (itemType === undefined || itemType === null) {
    return { type: 'missing', loc, msg: 'Field required', input: null, expected_format: { ...ITEM_TYPE_FORMAT } };
  }
  if (typeof itemType !== 'string') {
    return { type: 'string_type', loc, msg: 'Input should be a valid string', input: itemType, expected_format: { ...ITEM_TYPE_FORMAT } };
  }
  return {
    type: 'enum',
    loc,
    msg: 'Input should be a supported item_type (listed in ctx.expected; operator.<subtype> and connection.<kind> are accepted too)',
    input: itemType,
    expected_format: { ...ITEM_TYPE_FORMAT },
    ctx: { expected: supportedItemTypes() },
  };
}
