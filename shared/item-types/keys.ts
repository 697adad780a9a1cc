import { resolveItemType } from './definitions.ts';

/**
 * Unique keys. A type's uniqueFields must be unique together among live items of the same base type
 * (so `x.operator` as operator.python and as operator.sql under one folder collide). A key applies
 * only when every key field has a value: root items have no parent_laui, so root names are not
 * constrained. Defaults (task partition `ALL`) are applied before keys are taken.
 */

const present = (value: unknown): boolean => value !== undefined && value !== null && value !== '';

/** Values of the unique fields, or null when the type has no key or a key field is absent. */
export function uniqueKeyValues(itemType: string, item: Record<string, unknown>): unknown[] | null {
  const definition = resolveItemType(itemType);
  if (definition === null || definition.uniqueFields.length === 0) return null;
  const values = definition.uniqueFields.map((field) => item[field]);
  return values.every(present) ? values : null;
}

/** Identity of the unique key, scoped by base type (use it, e.g. hashed, as the reservation name); null = no key. */
export function uniqueKey(itemType: string, item: Record<string, unknown>): string | null {
  const definition = resolveItemType(itemType);
  const values = uniqueKeyValues(itemType, item);
  return definition === null || values === null ? null : JSON.stringify([definition.base, ...values]);
}

/** The `pk` string of search results: unique field values joined with hyphens (spec 2.1); null = no key. */
export function primaryKey(itemType: string, item: Record<string, unknown>): string | null {
  const values = uniqueKeyValues(itemType, item);
  return values === null ? null : values.map(String).join('-');
}
