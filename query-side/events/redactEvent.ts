import { createHash } from 'node:crypto';
import { MASK, isSealedField, isSecretKey, maskCredentialsInString } from '../../shared/item-types/secretFields.ts';

/**
 * The one redaction every served event goes through (GET /events, the SSE stream, the CLI export,
 * the Kafka `domain-events` topic): the log keeps what the service needs, readers of the log get
 * no credential and nothing that opens one.
 *
 * - A sealed credential field (`{$sealed, keys, shown}`, connections and chat items) keeps its
 *   shape and masked view; its ciphertext becomes `********`: an exported ciphertext would be
 *   one leaked deployment key away from plaintext.
 * - A value under a secret-bearing key (isSecretKey: password_hash, token, api_key, ...) becomes
 *   `********`, whatever its type (the sealed marketplace token included) but a boolean or null.
 * - Any other string loses a password it embeds (`scheme://user:secret@host`, `password=...`).
 *
 * Stream ids are left alone except those named after a credential's hash (`authcode-<sha256>`,
 * `refresh-<sha256>`): the hash identifies the stream the service looks a presented code up in,
 * so it is replaced by a digest of it, which still ties a code's events together.
 */
/**
 * Key names repeat across millions of events: each is classified once (isSecretKey splits and
 * matches words). Bounded, since data keys are user-chosen: a full cache is simply cleared.
 */
const secretKeys = new Map<string, boolean>();
const isSecret = (key: string): boolean => {
  let known = secretKeys.get(key);
  if (known === undefined) {
    if (secretKeys.size >= 10_000) secretKeys.clear();
    known = isSecretKey(key);
    secretKeys.set(key, known);
  }
  return known;
};

/** Only a string with `@` (user:secret@host) or `=` (password=...) can embed a credential. */
const maskString = (value: string): string => (value.includes('@') || value.includes('=') ? maskCredentialsInString(value) : value);

/**
 * True when redactData would change something. Most events hold no credential: checking first,
 * without allocating, lets those be served as they are instead of copied (a third of the cost of
 * streaming an event).
 */
const needsRedaction = (value: unknown): boolean => {
  if (typeof value === 'string') return value.includes('@') || value.includes('=');
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) {
    for (const inner of value) if (needsRedaction(inner)) return true;
    return false;
  }
  if ('$sealed' in value) return true;
  for (const key in value) {
    const inner = (value as Record<string, unknown>)[key];
    if (isSecret(key) && inner !== null && typeof inner !== 'boolean') return true;
    if (needsRedaction(inner)) return true;
  }
  return false;
};

/** The data as served: the event's own object when nothing in it is secret, else a redacted copy. */
export const redactData = (value: unknown): unknown => (needsRedaction(value) ? redactCopy(value) : value);

const redactCopy = (value: unknown): unknown => {
  if (typeof value === 'string') return maskString(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(redactCopy);
  if (isSealedField(value)) {
    const { shown, keys } = value;
    return { $sealed: MASK, keys, ...(shown === undefined ? {} : { shown: redactCopy(shown) }) };
  }
  const result: Record<string, unknown> = {};
  // A flag is no secret (must_change_password: false stays readable); any other value under a secret key is.
  // Object.keys, not Object.entries: the same own keys in the same order, without a [key, value] array per key.
  for (const key of Object.keys(value)) {
    const inner = (value as Record<string, unknown>)[key];
    result[key] = isSecret(key) && inner !== null && typeof inner !== 'boolean' ? MASK : redactCopy(inner);
  }
  return result;
};

const HASHED_STREAM = /^(authcode|refresh)-([0-9a-f]{64})$/;

export const redactStreamId = (streamId: string): string => {
  const match = HASHED_STREAM.exec(streamId);
  if (!match) return streamId;
  return `${match[1]}-${createHash('sha256').update(`served-stream:${match[2]}`).digest('hex').slice(0, 32)}`;
};
