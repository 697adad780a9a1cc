import { Ajv, type ErrorObject, type JSONSchemaType, type Schema, type ValidateFunction } from 'ajv';
import { unprocessable, type ValidationEntry } from '../errors.ts';

/**
 * Request validation with ajv, reported in the list-of-entries form existing clients parse
 * (`{type, loc, msg, input}`, as FastAPI/pydantic emit them). One Ajv instance for the process:
 * compiled validators are cached by schema (below).
 */
const ajv = new Ajv({ allErrors: true, strict: true, coerceTypes: false, useDefaults: true });

export type Location = 'body' | 'query' | 'path' | 'cookie';

/** Schema of a LAUI (ObjectId) field; a mismatch is reported as `Invalid ObjectId`. */
export const LAUI_PATTERN = '^[0-9a-f]{24}$';
export const lauiSchema = { type: 'string', pattern: LAUI_PATTERN } as const;

export const invalidLauiEntry = (loc: ReadonlyArray<string | number>, input: unknown): ValidationEntry => ({
  type: 'value_error',
  loc,
  msg: 'Invalid ObjectId',
  input,
  ctx: { error: 'must be a 24-character hexadecimal ObjectId' },
});

const entryFor = (where: Location, error: ErrorObject, root: unknown): ValidationEntry => {
  const path = error.instancePath
    .split('/')
    .filter((segment) => segment !== '')
    .map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment.replace(/~1/g, '/').replace(/~0/g, '~')));
  const input = path.reduce<unknown>(
    (value, key) => (value !== null && typeof value === 'object' ? (value as Record<string | number, unknown>)[key] : undefined),
    root,
  );
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return { type: 'missing', loc: [where, ...path, String(params.missingProperty)], msg: 'Field required', input };
    case 'additionalProperties':
      return {
        type: 'extra_forbidden',
        loc: [where, ...path, String(params.additionalProperty)],
        msg: 'Extra inputs are not permitted',
        input: (input as Record<string, unknown> | undefined)?.[String(params.additionalProperty)],
      };
    case 'enum': {
      const allowed = (params.allowedValues as unknown[]).map((value) => `'${String(value)}'`);
      const expected = allowed.length > 1 ? `${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}` : allowed.join('');
      return { type: 'enum', loc: [where, ...path], msg: `Input should be ${expected}`, input, ctx: { expected } };
    }
    case 'type': {
      const type = String(params.type);
      const names: Record<string, [string, string]> = {
        string: ['string_type', 'Input should be a valid string'],
        integer: ['int_type', 'Input should be a valid integer'],
        number: ['float_type', 'Input should be a valid number'],
        boolean: ['bool_type', 'Input should be a valid boolean'],
        object: ['model_attributes_type', 'Input should be a valid dictionary or object to extract fields from'],
        array: ['list_type', 'Input should be a valid list'],
      };
      const [kind, msg] = names[type] ?? ['type_error', `Input should be of type ${type}`];
      return { type: kind, loc: [where, ...path], msg, input };
    }
    case 'pattern':
      if (params.pattern === LAUI_PATTERN) return invalidLauiEntry([where, ...path], input);
      return {
        type: 'string_pattern_mismatch',
        loc: [where, ...path],
        msg: `String should match pattern '${String(params.pattern)}'`,
        input,
        ctx: { pattern: params.pattern },
      };
    case 'minLength':
      return { type: 'string_too_short', loc: [where, ...path], msg: `String should have at least ${String(params.limit)} characters`, input };
    case 'maxLength':
      return { type: 'string_too_long', loc: [where, ...path], msg: `String should have at most ${String(params.limit)} characters`, input };
    case 'minimum':
      return { type: 'greater_than_equal', loc: [where, ...path], msg: `Input should be greater than or equal to ${String(params.limit)}`, input };
    case 'maximum':
      return { type: 'less_than_equal', loc: [where, ...path], msg: `Input should be less than or equal to ${String(params.limit)}`, input };
    default:
      return { type: error.keyword, loc: [where, ...path], msg: error.message ?? 'Invalid value', input };
  }
};

/**
 * Ajv caches what it compiled by schema object: a schema written inline at a call site is a new
 * object per request, compiled again each time (a tenth of a millisecond and more) and kept in
 * Ajv's cache for good, a leak. So validators are looked up by the schema object, then by its
 * JSON text, which is the same for every request of one call site.
 */
const byObject = new WeakMap<object, ValidateFunction>();
const byText = new Map<string, ValidateFunction>();
export const validatorOf = (schema: Schema): ValidateFunction => {
  const known = typeof schema === 'object' ? byObject.get(schema) : undefined;
  if (known) return known;
  const text = JSON.stringify(schema);
  let validate = byText.get(text);
  if (!validate) {
    validate = ajv.compile(schema);
    byText.set(text, validate);
  }
  if (typeof schema === 'object') byObject.set(schema, validate);
  return validate;
};

/** Validates (and applies schema defaults to) `value`; throws a 422 with every problem found. */
export function validateRequest<T>(schema: JSONSchemaType<T> | Schema, value: unknown, where: Location = 'body'): T {
  const validate = validatorOf(schema as Schema) as ValidateFunction<T>;
  if (validate(value)) return value;
  const errors = validate.errors ?? [];
  throw unprocessable(errors.map((error) => entryFor(where, error, value)));
}

/** A body that is not a JSON object at all (a string, an array, nothing) is reported like pydantic does. */
export const requireObjectBody = (body: unknown): Record<string, unknown> => {
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) return body as Record<string, unknown>;
  throw unprocessable([
    { type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: body ?? null },
  ]);
};
