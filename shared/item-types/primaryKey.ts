import { primaryKey, uniqueKey } from './keys.ts';

/** The `pk` search returns; an item without a complete key (roots, untyped) falls back to its name. */
export const primaryKeyOf = (itemType: string, item: Record<string, unknown>): string => primaryKey(itemType, item) ?? String(item.name ?? '');

/** The reservation key of an item's unique constraint, or null when none applies. */
export const uniqueKeyOf = (itemType: string, item: Record<string, unknown>): string | null => {
  const key = uniqueKey(itemType, item);
  return key === null ? null : `item:${key}`;
};
