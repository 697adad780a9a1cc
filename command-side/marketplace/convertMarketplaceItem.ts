import { SERVICE_MANAGED_FIELDS, resolveItemType } from '../../shared/item-types/itemTypes.ts';
import { MASK, secretFieldsOf } from '../../shared/item-types/secretFields.ts';
import { RESERVED_KEYS } from '../catalog/catalogDeps.ts';

/** Spec 4.8: the item types an import creates, each with its subtypes (operator.python, connection.postgresql...). */
export const IMPORTABLE_BASES: ReadonlyArray<string> = ['operator', 'action', 'payload', 'config', 'connection'];

/** The base of an importable item_type, or null (unknown types and every other family). */
export const importableBase = (itemType: string): string | null => {
  const base = resolveItemType(itemType)?.base ?? null;
  return base !== null && IMPORTABLE_BASES.includes(base) ? base : null;
};

/**
 * Keys of a fetched item that are the marketplace's, not the item's content (spec 4.8: `_id`, laui,
 * created/updated/deleted, version; plus what this service's read view carries): identifiers, access,
 * bookkeeping, and a connection's queue metrics (its queue there, not here). The catalog create
 * pipeline would drop the reserved ones too; dropping them here keeps them out of validation errors.
 */
const DROPPED: ReadonlySet<string> = new Set([
  ...SERVICE_MANAGED_FIELDS,
  ...RESERVED_KEYS,
  'created_seq',
  'children',
  'queue_active',
  'queue_running',
  'queue_waiting',
  'current_parallelism',
  'in_queue',
]);

/**
 * `*_laui` keys (an action's project_laui, account_laui, connection_laui...) name items of the
 * marketplace's catalog, which this one does not have: the copy would point at nothing (or, were a
 * LAUI ever to collide, at a stranger's item). Dropped; the importer sets its own.
 */
const isForeignReference = (key: string): boolean => key.endsWith('_laui');

export interface ConvertedItem {
  /** A POST /catalog/create body: item_type, name, the content fields, parent_laui, is_root false. */
  body: Record<string, unknown>;
  /** Paths (`content.password`) of masked secret values left out: the importer must set them. */
  strippedSecrets: string[];
}

const setOwn = (target: Record<string, unknown>, key: string, value: unknown): void => {
  // A `__proto__` key of parsed JSON stays data, never a prototype.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
};

/** Absent from the result: the value was a masked secret (or a foreign ciphertext) and is recorded in `stripped`. */
const DROP = Symbol('drop');

/**
 * A credential value as the marketplace served it, without what it masked: every string holding
 * `********` (a masked secret, or a URL whose password was masked) and every sealed value (`$sealed`:
 * ciphertext under another deployment's key, which nothing here can open) is left out, its path
 * recorded. Other values stay (host, port, user, region...).
 */
const withoutMasked = (value: unknown, path: string, stripped: string[]): unknown => {
  if (typeof value === 'string') {
    if (!value.includes(MASK)) return value;
    stripped.push(path);
    return DROP;
  }
  if (Array.isArray(value)) {
    return value.map((inner, index) => withoutMasked(inner, `${path}.${index}`, stripped)).filter((inner) => inner !== DROP);
  }
  if (value === null || typeof value !== 'object') return value;
  if ('$sealed' in value) {
    const shown = (value as { shown?: unknown }).shown;
    // A sealed field served raw (not by this service, which serves its masked view): its view, if it has one.
    if (shown !== undefined && shown !== null && typeof shown === 'object') return withoutMasked(shown, path, stripped);
    stripped.push(path);
    return DROP;
  }
  const result: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const inner = withoutMasked((value as Record<string, unknown>)[key], `${path}.${key}`, stripped);
    if (inner !== DROP) setOwn(result, key, inner);
  }
  return result;
};

/**
 * Spec 4.8's conversion of a fetched item into a create body: keep item_type, name and the content
 * fields; drop the marketplace's own keys (DROPPED, `*_laui` references); set parent_laui and
 * is_root false. A type's credential fields (a connection's `content`) come masked from any
 * marketplace that is this service (it never serves them in clear): the masked values are left out
 * and named in `strippedSecrets` rather than stored as if `********` were the password.
 */
export const convertMarketplaceItem = (item: Record<string, unknown>, itemType: string, name: string, parentLaui: string): ConvertedItem => {
  const secretFields = new Set(secretFieldsOf(itemType));
  const strippedSecrets: string[] = [];
  const body: Record<string, unknown> = {};
  for (const key of Object.keys(item)) {
    if (DROPPED.has(key) || isForeignReference(key)) continue;
    const value = item[key];
    if (!secretFields.has(key)) {
      setOwn(body, key, value);
      continue;
    }
    const kept = withoutMasked(value, key, strippedSecrets);
    if (kept !== DROP) setOwn(body, key, kept);
  }
  setOwn(body, 'item_type', itemType);
  setOwn(body, 'name', name);
  setOwn(body, 'parent_laui', parentLaui);
  setOwn(body, 'is_root', false);
  return { body, strippedSecrets };
};
