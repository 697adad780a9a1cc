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
  /**
   * What a reader sees (maskSecrets): the value with only its secret-bearing parts masked. Absent on
   * values sealed before issue 19, which show every top-level key masked.
   */
  shown?: unknown;
}

export const MASK = '********';

/**
 * Key names whose value is a secret wherever they appear (compared lower-cased, without `_`, `-`,
 * `.` or spaces, as a part of the name): passwords (password, passwd, passphrase), secrets
 * (secret, client_secret, secret_access_key), tokens (token, access_token, refresh_token,
 * session_token, auth_token), keys (api_key, apikey, private_key, access_key, account_key,
 * key_file, keyfile), credentials and key files (credentials, service_account), the spec's LLM
 * `api_key`, authorization headers, cookies and SAS signatures.
 */
const SECRET_PARTS = [
  'password',
  'passwd',
  'passphrase',
  'secret',
  'token',
  'apikey',
  'privatekey',
  'accesskey',
  'accountkey',
  'keyfile',
  'credential',
  'serviceaccount',
  'authorization',
  'cookie',
  'signature',
];
/** Whole-word names too short to match as a part (`pwd` would catch nothing else, `key` would catch `keyspace`). */
const SECRET_WORDS = new Set(['pwd', 'pass', 'key', 'sas', 'auth', 'secretkey', 'jwt', 'pat', 'pem']);
/** Names holding a secret word that are not secrets (the spec's chat `token_limit`, OAuth endpoints). */
const NOT_SECRET = new Set(['tokenlimit', 'maxtokens', 'tokencount', 'tokentype', 'tokenurl', 'tokenuri', 'tokenendpoint', 'authtype', 'authmethod', 'authmode', 'authprovider', 'authurl', 'authuri', 'authendpoint', 'authsource', 'authdatabase', 'authmechanism', 'passwordpolicy']);

/** True when a key's value is a secret (SECRET_PARTS, SECRET_WORDS, minus NOT_SECRET). */
export const isSecretKey = (key: string): boolean => {
  const compact = key.toLowerCase().replace(/[\s_.-]+/g, '');
  if (NOT_SECRET.has(compact)) return false;
  if (SECRET_PARTS.some((part) => compact.includes(part))) return true;
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== '');
  return words.some((word) => SECRET_WORDS.has(word)) || SECRET_WORDS.has(compact);
};

/**
 * A URL or connection string shown without its password: `scheme://user:secret@host` keeps the
 * user, and `password=`/`pwd=`-style pairs (query strings, ODBC/JDBC strings) keep their name.
 */
export const maskCredentialsInString = (value: string): string =>
  value
    .replace(/(\/\/[^:/?#@\s]*:)[^@/\s]*@/g, `$1${MASK}@`)
    .replace(/((?:^|[?&;\s])(?:password|passwd|pwd|pass|secret|token|access_token|api_key|apikey|key|sig|accountkey|sharedaccesskey)\s*=\s*)[^&;\s]*/gi, `$1${MASK}`);

/**
 * The reader's view of credentials (issue 19): every value under a secret-bearing key (isSecretKey)
 * is masked whole, whatever it holds (an object, a key file's JSON); other values stay readable
 * (host, port, database, user, region, project...), nested objects and lists walked the same way,
 * and strings lose any password they embed (maskCredentialsInString). A secret that is not a string
 * is masked too: `password: 1234` shows `********`.
 */
export const maskSecrets = (value: unknown): unknown => {
  if (typeof value === 'string') return maskCredentialsInString(value);
  if (Array.isArray(value)) return value.map(maskSecrets);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, isSecretKey(key) ? (inner === null ? null : MASK) : maskSecrets(inner)]));
};

/** Secret values shorter than this are not looked for in a run's output: they would mask ordinary words. */
export const MIN_MASKED_SECRET = 4;

/**
 * The secret strings of an opened value (a connection's content), to mask in what a run prints:
 * every string or number under a secret-bearing key (isSecretKey), at any depth, and the password
 * of a `scheme://user:password@host` string anywhere. Those shorter than MIN_MASKED_SECRET are left out.
 */
export const secretStringsOf = (value: unknown): string[] => {
  const found: string[] = [];
  const walk = (inner: unknown, secret: boolean): void => {
    if (typeof inner === 'string') {
      if (secret) found.push(inner);
      for (const match of inner.matchAll(/\/\/[^:/?#@\s]*:([^@/\s]+)@/g)) if (match[1]) found.push(match[1]);
    } else if (typeof inner === 'number' && secret) {
      found.push(String(inner));
    } else if (Array.isArray(inner)) {
      for (const item of inner) walk(item, secret);
    } else if (inner !== null && typeof inner === 'object') {
      for (const [key, item] of Object.entries(inner)) walk(item, secret || isSecretKey(key));
    }
  };
  walk(value, false);
  return [...new Set(found)].filter((text) => text.length >= MIN_MASKED_SECRET);
};

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
    result[field] = { $sealed: secrets.seal(JSON.stringify(value)), keys, shown: maskSecrets(value) } satisfies SealedField;
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

/**
 * What a client sees: every sealed field with only its secret-bearing parts masked (maskSecrets,
 * made when it was sealed) for a reader with VIEW on the item; a stranger, or a value sealed before
 * that rule, shows its keys with masked values.
 */
export const maskSealedFields = (view: Record<string, unknown>, reader: 'viewer' | 'stranger' = 'viewer'): Record<string, unknown> => {
  for (const [field, value] of Object.entries(view)) {
    if (!isSealedField(value)) continue;
    // A caller without VIEW (the routes the spec leaves unchecked: the flat GET, item_revisions)
    // learns the shape only, as before: host, user and database are not for strangers either.
    view[field] = reader === 'viewer' && value.shown !== undefined ? value.shown : Object.fromEntries(value.keys.map((key) => [key, MASK]));
  }
  return view;
};

/** True when the item type has sealed fields (connections, chat): its view depends on the reader. */
export const hasSecretFields = (itemType: string): boolean => secretFieldsOf(itemType).length > 0;
