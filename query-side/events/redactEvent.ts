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
export const redactData = (value: unknown): unknown => {
  if (typeof value === 'string') return maskCredentialsInString(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(redactData);
  if (isSealedField(value)) {
    const { shown, keys } = value;
    return { $sealed: MASK, keys, ...(shown === undefined ? {} : { shown: redactData(shown) }) };
  }
  const result: Record<string, unknown> = {};
  // A flag is no secret (must_change_password: false stays readable); any other value under a secret key is.
  for (const [key, inner] of Object.entries(value)) {
    result[key] = isSecretKey(key) && inner !== null && typeof inner !== 'boolean' ? MASK : redactData(inner);
  }
  return result;
};

const HASHED_STREAM = /^(authcode|refresh)-([0-9a-f]{64})$/;

export const redactStreamId = (streamId: string): string => {
  const match = HASHED_STREAM.exec(streamId);
  if (!match) return streamId;
  return `${match[1]}-${createHash('sha256').update(`served-stream:${match[2]}`).digest('hex').slice(0, 32)}`;
};
