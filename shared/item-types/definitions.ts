import { chatHistoryType, chatType } from './schemas/ai.ts';
import { CONNECTION_ALIASES, connectionTypes } from './schemas/connection.ts';
import { configType, htmlReportType, payloadType, skillType, tableType } from './schemas/content.ts';
import { folderTypes } from './schemas/folder.ts';
import { actionType, operatorType } from './schemas/operator.ts';
import { taskType } from './schemas/task.ts';
import type { ItemTypeDefinition } from './types.ts';

/**
 * The registered item types and item_type canonicalisation.
 * - Registered types resolve to themselves.
 * - Aliases (connection.postgres, connection.s3, ...) resolve to their canonical type.
 * - `operator.<subtype>` and `connection.<kind>` with an unregistered suffix (letters, digits, `_`, `-`)
 *   are open subtypes: they keep their own type name and use the operator / generic connection definition.
 */

const REGISTERED: readonly ItemTypeDefinition[] = [
  ...folderTypes,
  operatorType,
  actionType,
  ...connectionTypes,
  payloadType,
  configType,
  taskType,
  tableType,
  htmlReportType,
  skillType,
  chatType,
  chatHistoryType,
];

const byType = new Map(REGISTERED.map((definition) => [definition.type, definition]));

export const ALIASES: Readonly<Record<string, string>> = CONNECTION_ALIASES;

/** Families whose subtypes are open: any `<family>.<suffix>` is accepted. */
const OPEN_FAMILIES = ['operator', 'connection'] as const;
const SUBTYPE_SUFFIX = /^[a-zA-Z0-9_-]+$/;

const openFamily = (itemType: string): (typeof OPEN_FAMILIES)[number] | null => {
  const dot = itemType.indexOf('.');
  if (dot < 0) return null;
  const family = itemType.slice(0, dot);
  const suffix = itemType.slice(dot + 1);
  return (OPEN_FAMILIES as readonly string[]).includes(family) && SUBTYPE_SUFFIX.test(suffix)
    ? (family as (typeof OPEN_FAMILIES)[number])
    : null;
};

export function canonicalItemType(itemType: string): string | null {
  if (typeof itemType !== 'string') return null;
  if (byType.has(itemType)) return itemType;
  const alias = Object.hasOwn(ALIASES, itemType) ? ALIASES[itemType] : undefined;
  if (alias !== undefined) return alias;
  return openFamily(itemType) === null ? null : itemType;
}

const derived = new Map<string, ItemTypeDefinition>();
const DERIVED_CACHE_LIMIT = 1024;

export function resolveItemType(itemType: string): ItemTypeDefinition | null {
  const canonical = canonicalItemType(itemType);
  if (canonical === null) return null;
  const registered = byType.get(canonical);
  if (registered !== undefined) return registered;
  const cached = derived.get(canonical);
  if (cached !== undefined) return cached;
  const family = openFamily(canonical);
  const base = family === null ? undefined : byType.get(family);
  if (base === undefined) return null;
  const definition: ItemTypeDefinition = Object.freeze({ ...base, type: canonical });
  if (derived.size < DERIVED_CACHE_LIMIT) derived.set(canonical, definition);
  return definition;
}

/** Registered types (aliases and open subtypes excluded), in a stable order. */
export function listItemTypes(): ItemTypeDefinition[] {
  return [...REGISTERED];
}

/** The family used by the hierarchy table: `operator` for operator.*, `connection` for connection.*, else the type. */
export function hierarchyKey(canonical: string): string {
  return openFamily(canonical) ?? canonical;
}
