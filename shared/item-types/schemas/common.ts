import type { ItemTypeDefinition } from '../types.ts';

/**
 * Building blocks of the item-type schemas: ObjectId and datetime field schemas, the common catalog
 * fields of spec 2.1, and the object-schema builder every type uses.
 *
 * Extra-keys policy (see docs/decisions.md): top-level keys not declared by a type are allowed and kept
 * on every type (the spec does not show the complete per-type schemas, tasks explicitly allow extras,
 * and imported items carry more than we know). Nested objects are open too, except the task's
 * `actions` object, where a misspelt key (`pre_action`) would silently skip blocking pre-actions.
 */

export const OBJECT_ID_PATTERN = '^[0-9a-f]{24}$';
/** Custom ajv format for ISO 8601 dates / date-times (registered by the validator). */
export const DATETIME_FORMAT = 'iso-datetime';

export type JsonSchema = Record<string, unknown>;

export const objectId = (): JsonSchema => ({ type: 'string', pattern: OBJECT_ID_PATTERN });
export const nullableObjectId = (): JsonSchema => ({ type: ['string', 'null'], pattern: OBJECT_ID_PATTERN });
export const objectIdList = (): JsonSchema => ({ type: 'array', items: objectId() });
export const datetime = (): JsonSchema => ({ type: ['string', 'null'], format: DATETIME_FORMAT });
export const str = (): JsonSchema => ({ type: 'string' });
export const nullableStr = (): JsonSchema => ({ type: ['string', 'null'] });
export const obj = (): JsonSchema => ({ type: 'object' });
export const nullableObj = (): JsonSchema => ({ type: ['object', 'null'] });
export const int = (minimum?: number): JsonSchema => (minimum === undefined ? { type: 'integer' } : { type: 'integer', minimum });
export const stringEnum = (values: readonly string[]): JsonSchema => ({ type: 'string', enum: [...values] });

/** `codeblock` / `bashblock`: create examples use `code`, the action-run endpoint `content` (spec 2.3 note). */
export const codeBlock = (): JsonSchema => ({
  type: 'object',
  properties: { language: str(), code: str(), content: str() },
});

/** Common catalog fields (spec 2.1) accepted on every type. parent_laui/is_root rules: checkRootRules. */
export const commonProperties = (namePattern: string | null): Record<string, JsonSchema> => ({
  item_type: str(),
  name: namePattern === null ? { type: 'string', minLength: 1 } : { type: 'string', pattern: namePattern },
  description: nullableStr(),
  parent_laui: nullableObjectId(),
  is_root: { type: 'boolean' },
  access_patch: obj(),
});

/** Every type requires a name on create (spec 4.3); parent_laui is handled by the root rules. */
export const COMMON_REQUIRED = ['name'] as const;
/** Revisions are created for these on every type. */
export const COMMON_VERSIONED = ['name', 'description'] as const;

/** Item schema: common fields plus the type's own, top-level extra keys allowed. */
export const itemSchema = (
  namePattern: string | null,
  properties: Record<string, JsonSchema>,
  required: readonly string[],
): JsonSchema => ({
  type: 'object',
  properties: { ...commonProperties(namePattern), ...properties },
  required: [...required],
  additionalProperties: true,
});

export const OPERATOR_NAME_PATTERN = '^[a-zA-Z0-9_-]+\\.operator$';
export const ACTION_NAME_PATTERN = '^[a-zA-Z0-9_-]+\\.action$';

/** Unique key of every named item other than task and chat_history: its name among its siblings. */
export const SIBLING_UNIQUE = ['parent_laui', 'name'] as const;

export interface TypeSpec {
  type: string;
  base: string;
  description: string;
  namePattern?: string | null;
  properties: Record<string, JsonSchema>;
  /** Required besides `name`. */
  required?: readonly string[];
  uniqueFields: readonly string[];
  /** Versioned besides `name` and `description`. */
  versionedFields: readonly string[];
  /**
   * Create defaults of the type's own fields. Common fields get none here: is_root's default (false)
   * is structural and applied by the create command, which strips common keys from the type fields.
   */
  defaults?: Record<string, unknown>;
}

const deepFreeze = <T>(value: T): T => {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
};

/** Builds a deeply frozen definition from a type spec, adding the common fields and requirements. */
export const defineType = (spec: TypeSpec): ItemTypeDefinition => {
  const namePattern = spec.namePattern ?? null;
  const required = [...COMMON_REQUIRED, ...(spec.required ?? [])];
  return deepFreeze({
    type: spec.type,
    base: spec.base,
    description: spec.description,
    schema: itemSchema(namePattern, spec.properties, required),
    required,
    namePattern,
    uniqueFields: [...spec.uniqueFields],
    versionedFields: [...COMMON_VERSIONED, ...spec.versionedFields],
    defaults: { ...(spec.defaults ?? {}) },
  });
};
