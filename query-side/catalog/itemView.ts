import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { hasSecretFields, maskSealedFields } from '../../shared/item-types/secretFields.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { Laui } from '../../shared/ids.ts';
import type { AccessControl } from '../../projections/catalog/accessControl.ts';

/** Read-model bookkeeping that is not part of an item as clients see it. */
const INTERNAL = new Set(['id', '_position', 'is_deleted', 'created_seq', 'queue_active']);

/** An item as clients see it: no bookkeeping, credentials masked (docs/decisions.md). */
export const itemView = (doc: ItemDoc, reader: 'viewer' | 'stranger' = 'viewer'): Record<string, unknown> => {
  const view: Record<string, unknown> = {};
  for (const key in doc) if (!INTERNAL.has(key)) view[key] = doc[key];
  // Only the types with credentials hold sealed values (sealSecretFields seals their fields alone):
  // the others (tasks, read by every poll of a run) skip the walk over their fields.
  return hasSecretFields(doc.item_type) ? maskSealedFields(view, reader) : view;
};

/**
 * Who reads an item with credentials (a connection, a chat item): a caller with VIEW on it sees its
 * non-secret fields, any other (routes the spec leaves unchecked, soft-linked children) its keys only.
 * Items without credentials read the same for everyone, with no access lookup.
 */
export const readerOf = async (
  access: Pick<AccessControl, 'can'>,
  principal: Principal,
  doc: ItemDoc,
  principals?: Set<Laui>,
): Promise<'viewer' | 'stranger'> => (!hasSecretFields(doc.item_type) || (await access.can(principal, doc, 'VIEW', principals)) ? 'viewer' : 'stranger');

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
