import { isDeepStrictEqual } from 'node:util';
import type { Sealed, SecretBox } from '../ports/SecretBox.ts';
import { resolveItemType } from './itemTypes.ts';

/**
 * Fields holding credentials, by base type: a connection's `content` and a chat item's LLM
 * `connection`. They enter the event log sealed with the deployment key (DESIGN §3), stay sealed
 * in the read models, and leave the service masked; only workers open them.
 */
const SECRET_FIELDS: Record<string, ReadonlyArray<string>> = { connection: ['content'], chat: ['connection'] };

export interface SealedField {
  $sealed: Sealed;
  /** Top-level key names (not secret), so a masked view can still show the shape. */
  keys: string[];
}

export const MASK = '********';

export const secretFieldsOf = (itemType: string): ReadonlyArray<string> => SECRET_FIELDS[resolveItemType(itemType)?.base ?? ''] ?? [];

export const isSealedField = (value: unknown): value is SealedField =>
  value !== null && typeof value === 'object' && '$sealed' in value && typeof (value as { $sealed: unknown }).$sealed === 'object';

/**
 * Seals the secret fields present in `fields`. A value equal to what `previous` already seals is
 * dropped, so re-sending unchanged credentials does not make a new revision.
 */
export const sealSecretFields = (
  itemType: string,
  fields: Record<string, unknown>,
  secrets: SecretBox,
  previous: Record<string, unknown> = {},
): Record<string, unknown> => {
  const result = { ...fields };
  for (const field of secretFieldsOf(itemType)) {
    if (!(field in result) || isSealedField(result[field])) continue;
    const value = result[field];
    const before = previous[field];
    if (isSealedField(before) && isDeepStrictEqual(JSON.parse(secrets.open(before.$sealed)), value)) {
      delete result[field];
      continue;
    }
    const keys = value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value) : [];
    result[field] = { $sealed: secrets.seal(JSON.stringify(value)), keys } satisfies SealedField;
  }
  return result;
};

/** The value a worker hands to operator code. */
export const openSecretField = (value: unknown, secrets: SecretBox): unknown =>
  isSealedField(value) ? (JSON.parse(secrets.open(value.$sealed)) as unknown) : value;

/**
 * openSecretField that keeps each opened value as long as its sealed value lives (a WeakMap keyed
 * by it): a worker opens the same connection for every run of its tasks, and an AES-GCM open was
 * ~2% of the event loop under task load. Only for sealed values that are replaced on change, never
 * mutated (peeked read-model documents), and for callers that do not mutate what they get.
 */
export const secretFieldOpener = (secrets: SecretBox): ((value: unknown) => unknown) => {
  const opened = new WeakMap<object, unknown>();
  return (value) => {
    if (!isSealedField(value)) return value;
    if (opened.has(value)) return opened.get(value);
    const plain = openSecretField(value, secrets);
    opened.set(value, plain);
    return plain;
  };
};

/** What a client sees: every sealed field as its keys with masked values. */
export const maskSealedFields = (view: Record<string, unknown>): Record<string, unknown> => {
  for (const [field, value] of Object.entries(view)) {
    if (isSealedField(value)) view[field] = Object.fromEntries(value.keys.map((key) => [key, MASK]));
  }
  return view;
};
