/**
 * Item-type registry of the catalog: one JSON Schema per item type (schemas/*.ts), the parent/child
 * table of spec 2.2, name rules, unique keys, versioned fields and create defaults.
 *
 * Policies (also in docs/decisions.md):
 * - Aliases normalise to a canonical type (connection.postgres -> connection.postgresql, ...);
 *   `operator.<subtype>` and `connection.<kind>` are open subtypes sharing their family's definition.
 * - Extra top-level keys are allowed on every type; only the task's `actions` object is closed.
 * - Unique keys: task = name, project_laui, account_laui, partition; chat_history none; every other
 *   type = parent_laui + name (siblings), scoped by base type, not applied to root items.
 * - Service-managed fields (SERVICE_MANAGED_FIELDS) are not part of any schema: the catalog commands
 *   drop them from client bodies.
 * - validateItem checks a body against its type's schema; the parent_laui / is_root rules are
 *   checkRootRules' (POST /catalog/create runs both and concatenates the entries).
 * - applyDefaults fills type fields only (no is_root / parent_laui / name).
 */
import { resolveItemType, listItemTypes, ALIASES } from './definitions.ts';
import { allowedChildren } from './hierarchy.ts';
import type { ItemTypeDefinition } from './types.ts';

export type { CatalogValidationEntry, ExpectedFormat, ItemTypeDefinition } from './types.ts';
export { ALIASES, canonicalItemType, listItemTypes, resolveItemType } from './definitions.ts';
export { allowedChildren, HIERARCHY, isChildAllowed } from './hierarchy.ts';
export {
  checkRootRules,
  INVALID_OBJECT_ID,
  ROOT_RULES_MSG,
  rulesEntry,
  supportedItemTypes,
  unknownItemTypeEntry,
} from './entries.ts';
export { primaryKey, uniqueKey, uniqueKeyValues } from './keys.ts';
export { OBJECT_ID_PATTERN } from './schemas/common.ts';
export { validateItem } from './validator.ts';

/** Set by the service, never taken from a create/update body. */
export const SERVICE_MANAGED_FIELDS: readonly string[] = Object.freeze([
  '_id',
  'laui',
  'created_at',
  'updated_at',
  'deleted_at',
  'created_by',
  'updated_by',
  'version',
  'pk',
]);

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** Own-property copy; `__proto__` (a legal JSON key) stays data, never a prototype. */
const setOwn = (target: Record<string, unknown>, key: string, value: unknown): void => {
  if (key === '__proto__') Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  else target[key] = value;
};

/** Copy of a JSON default (plain objects, arrays, primitives); far cheaper than structuredClone on hot paths. */
const copy = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(copy);
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) setOwn(out, key, copy(value[key]));
    return out;
  }
  return value;
};

// Built by assignment rather than `{...given}`: adding ~20 keys to a spread copy is ~10x slower in V8.
const fill = (defaults: Record<string, unknown>, given: Record<string, unknown>): Record<string, unknown> => {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(given)) setOwn(out, key, given[key]);
  for (const key of Object.keys(defaults)) {
    const fallback = defaults[key];
    const value = out[key];
    if (value === undefined) out[key] = copy(fallback);
    else if (isPlainObject(fallback) && Object.keys(fallback).length > 0 && isPlainObject(value)) out[key] = fill(fallback, value);
  }
  return out;
};

/**
 * A new object: `fields` with the type's defaults for absent (undefined) keys. Nested default objects
 * fill in missing sub-keys (task `actions` given only pre_actions still gets the three other lists).
 * Unknown types get a shallow copy. Time-dependent defaults (an ADHOC task's logical_date) are not here.
 */
export function applyDefaults(itemType: string, fields: Record<string, unknown>): Record<string, unknown> {
  const definition = resolveItemType(itemType);
  return definition === null ? { ...fields } : fill(definition.defaults, fields);
}

export interface ItemTypeDocumentEntry {
  item_type: string;
  base: string;
  description: string;
  required: string[];
  name_pattern: string | null;
  unique_fields: string[];
  versioned_fields: string[];
  allowed_children: string[];
  schema: Record<string, unknown>;
}

export interface ItemTypesDocument {
  types: ItemTypeDocumentEntry[];
  /** Accepted alternative item_type spellings and the canonical type each is stored as. */
  aliases: Record<string, string>;
}

const deepFreeze = <T>(value: T): T => {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
};

const entryOf = (definition: ItemTypeDefinition): ItemTypeDocumentEntry => ({
  item_type: definition.type,
  base: definition.base,
  description: definition.description,
  required: [...definition.required],
  name_pattern: definition.namePattern,
  unique_fields: [...definition.uniqueFields],
  versioned_fields: [...definition.versionedFields],
  allowed_children: allowedChildren(definition.type),
  schema: structuredClone(definition.schema),
});

let documentCache: ItemTypesDocument | null = null;

/** Body of GET /catalog/item-types/supported-types. Built once, deeply frozen (serialise it, do not mutate). */
export function itemTypesDocument(): ItemTypesDocument {
  documentCache ??= deepFreeze({ types: listItemTypes().map(entryOf), aliases: { ...ALIASES } });
  return documentCache;
}
