import type { ItemDoc } from '../../projections/catalog/itemsProjection.ts';
import { maskSealedFields } from '../../shared/item-types/secretFields.ts';

/** Read-model bookkeeping that is not part of an item as clients see it. */
const INTERNAL = new Set(['id', '_position', 'is_deleted', 'created_seq', 'queue_active']);

/** An item as clients see it: no bookkeeping, credentials masked (docs/decisions.md). */
export const itemView = (doc: ItemDoc): Record<string, unknown> => {
  const view: Record<string, unknown> = {};
  for (const key in doc) if (!INTERNAL.has(key)) view[key] = doc[key];
  return maskSealedFields(view);
};

/** Opaque cursors: base64url JSON of the offset after the page, so clients cannot depend on it. */
export const encodePageToken = (offset: number): string => Buffer.from(JSON.stringify({ o: offset })).toString('base64url');

export const decodePageToken = (token: string): number | null => {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { o?: unknown };
    return typeof parsed.o === 'number' && Number.isInteger(parsed.o) && parsed.o >= 0 ? parsed.o : null;
  } catch {
    return null;
  }
};
