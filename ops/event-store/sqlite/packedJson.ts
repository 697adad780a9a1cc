/**
 * The compact encoding of the `log` table's data and metadata (migrateEventStoreSchema.ts, schema
 * 2): a JSON value (what JSON.parse returns) as a short text, read back to an equal value, key
 * order kept. What makes it small, on the events the service writes most (a run's six):
 * - keys and frequent values (task states, field names) are two characters, from PACKED_DICTIONARY;
 * - 24-hex ids (lauis) take 16 characters, canonical UUIDs 22 (6 bits per character);
 * - ISO timestamps (`2026-01-01T00:00:00.000Z`) are their distance in ms from the row's commit
 *   time, usually two or three characters: the times an event carries are its command's time;
 * - a string repeated within one value (a dispatch id copied into two fields) is a reference
 *   to its first occurrence.
 *
 * Text, not bytes: SQLite hands a TEXT value to JavaScript as a string, cheaply, where every BLOB
 * becomes a Buffer of its own; reading the log (the start replays it) was twice as slow with
 * blobs. Every character the encoding adds is below 128, one byte of UTF-8 in the file; strings of
 * the value are kept as they are (UTF-8 in the file, like JSON text).
 *
 * Format: a value is a tag character and its body. Numbers (lengths, counts, indexes, integers,
 * zigzag-encoded when signed) are varints of 6-bit digits, least significant first, 64 marking
 * "more digits follow". The dictionary is append-only: a released index never changes meaning
 * (files in the field hold it).
 */

const NULL = 0;
const FALSE = 1;
const TRUE = 2;
const INT = 3; // zigzag varint: an integer of at most MAX_VARINT_INTEGER either way
const NUMBER = 4; // varint length + String(number): any other finite number, exactly
const STRING = 5; // varint length (UTF-16 units) + the characters
const HEX24 = 6; // 16 characters: a 24-char lowercase hex string, 3 hex digits per 2 characters
const UUID = 7; // 22 characters: a canonical lowercase UUID's 32 hex digits, as HEX24
const TIME = 8; // zigzag varint: ms from the base time, an ISO-8601 UTC timestamp with ms
const WORD = 9; // varint: index in PACKED_DICTIONARY
const REF = 10; // varint: index of an earlier string of this value (see REFERENCED_LENGTH)
const ARRAY = 11; // varint count + values
const OBJECT = 12; // varint count + (key, value) pairs, keys encoded as strings
const ESCAPED = 13; // varint length + JSON.stringify(string): a string with a lone surrogate, which UTF-8 cannot hold

const MAX_VARINT_INTEGER = 2 ** 52;

/** Strings at least this long are remembered, in order of first occurrence, for REF. */
const REFERENCED_LENGTH = 8;

/**
 * Keys and values frequent in the log. Append only: the index of an entry is stored in files.
 */
export const PACKED_DICTIONARY: ReadonlyArray<string> = [
  // Metadata
  'user_laui', 'correlation_id', 'causation_id', 'at', 'version',
  // A task's lifecycle and the change record
  'from', 'to', 'changes', 'revision_laui', 'trigger', 'state', 'execution_id', 'session_id', 'task_instance',
  'iteration', 'task_instance_start_date', 'latest_heartbeat', 'data_interval_start', 'data_interval_end', 'executor',
  'last_run_session_id', 'prev_interval_start', 'prev_interval_end', 'duration', 'last_run_output', 'last_run_date',
  'task_instance_end_date', 'retry_number', 'last_system_updated_date', 'logical_date', 'run_by', 'status',
  'user_set_state', 'actions_status', 'pre_actions', 'running_actions', 'post_actions', 'create_actions', 'actions',
  // States
  'scheduled', 'queued_for_connection', 'queued_in_redis', 'running', 'success', 'error', 'timeout', 'cancelled', 'fail', 'cancel',
  // Connection queues
  'task_laui', 'dispatch_id', 'enqueued', 'priority', 'sort_values', 'reason', 'finished', 'stale', 'reset',
  // Items
  'laui', 'item_type', 'name', 'parent_laui', 'parent_type', 'link_laui', 'is_root', 'fields', 'access', 'owners', 'editors',
  'viewers', 'true', 'project_laui', 'account_laui', 'operator_laui', 'connection_laui', 'description', 'frequency',
  'start_date', 'end_date', 'payload', 'payload_laui', 'config', 'attached_config_lauis', 'partition', 'total_retries',
  'retry_interval', 'ALL', 'ADHOC', 'task', 'folder.workflow', 'key', 'owner', 'content', 'codeblock', 'language', 'code',
  'python', 'javascript', 'folder_metadata', 'cron_status', 'child_laui', 'child_type', 'true_parent', 'diagnosed_at',
  'triggered', 'checks', 'result',
];

const WORDS = new Map(PACKED_DICTIONARY.map((word, index) => [word, index]));
const HEX24_PATTERN = /^[0-9a-f]{24}$/;
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIME_PATTERN = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d\d\dZ$/;
const SURROGATE = /[\ud800-\udfff]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** 12-bit value -> its 3 hex digits, and 8-bit value -> 2. */
const HEX3 = Array.from({ length: 4096 }, (_, value) => value.toString(16).padStart(3, '0'));
const HEX2 = Array.from({ length: 256 }, (_, value) => value.toString(16).padStart(2, '0'));

/** The ms of an ISO timestamp that reads back exactly as written, else NaN. */
export const exactTimeMs = (text: string): number => {
  if (text.length !== 24 || !TIME_PATTERN.test(text)) return NaN;
  const ms = Date.parse(text);
  return Number.isFinite(ms) && new Date(ms).toISOString() === text ? ms : NaN;
};

/** The text being written (one encoding at a time: the writer is synchronous). */
let out = '';

const char = (code: number): void => {
  out += String.fromCharCode(code);
};

function varint(value: number): void {
  let rest = value;
  while (rest >= 64) {
    char((rest % 64) | 64);
    rest = Math.floor(rest / 64);
  }
  char(rest);
}

const signed = (value: number): void => varint(value < 0 ? -2 * value - 1 : 2 * value);

/** Hex digits (length a multiple of 3, then 2 at most left) as 6-bit characters, 3 digits per 2. */
function hexDigits(hex: string): void {
  let at = 0;
  for (; at + 3 <= hex.length; at += 3) {
    const value = parseInt(hex.slice(at, at + 3), 16);
    char(value >> 6);
    char(value & 63);
  }
  if (at < hex.length) {
    const value = parseInt(hex.slice(at), 16);
    char(value >> 6);
    char(value & 63);
  }
}

/** Encodes a JSON value; `baseMs` is what timestamps are stored relative to (the commit time). */
export function packJson(value: unknown, baseMs: number): string {
  out = '';
  writeValue(value, baseMs, new Map<string, number>());
  const text = out;
  out = '';
  return text;
}

function writeValue(value: unknown, baseMs: number, seen: Map<string, number>): void {
  if (value === null) char(NULL);
  else if (value === true) char(TRUE);
  else if (value === false) char(FALSE);
  else if (typeof value === 'string') writeString(value, baseMs, seen);
  else if (typeof value === 'number') {
    // Up to 2^52 either way: its zigzag form stays a safe integer. Others as JavaScript writes them (exact).
    if (Number.isInteger(value) && Math.abs(value) <= MAX_VARINT_INTEGER) {
      char(INT);
      signed(value);
    } else if (Number.isFinite(value)) {
      const text = String(value);
      char(NUMBER);
      varint(text.length);
      out += text;
    } else char(NULL); // as JSON.stringify writes them
  } else if (Array.isArray(value)) {
    char(ARRAY);
    varint(value.length);
    for (const item of value) writeValue(item === undefined ? null : item, baseMs, seen);
  } else if (typeof value === 'object') {
    const object = value as Record<string, unknown>;
    let count = 0;
    for (const key in object) if (object[key] !== undefined) count += 1;
    char(OBJECT);
    varint(count);
    for (const key in object) {
      const item = object[key];
      if (item === undefined) continue;
      writeString(key, baseMs, seen);
      writeValue(item, baseMs, seen);
    }
  } else throw new TypeError(`packJson: not a JSON value (${typeof value})`);
}

function writeString(text: string, baseMs: number, seen: Map<string, number>): void {
  const word = WORDS.get(text);
  if (word !== undefined) {
    char(WORD);
    varint(word);
    return;
  }
  if (text.length >= REFERENCED_LENGTH) {
    const earlier = seen.get(text);
    if (earlier !== undefined) {
      char(REF);
      varint(earlier);
      return;
    }
    seen.set(text, seen.size);
  }
  if (text.length === 24) {
    // 'T' at 10: a timestamp's place (never hex).
    const ms = text.charCodeAt(10) === 84 ? exactTimeMs(text) : NaN;
    if (!Number.isNaN(ms)) {
      char(TIME);
      signed(ms - baseMs);
      return;
    }
    if (HEX24_PATTERN.test(text)) {
      char(HEX24);
      hexDigits(text);
      return;
    }
  } else if (text.length === 36 && UUID_PATTERN.test(text)) {
    char(UUID);
    hexDigits(text.replaceAll('-', ''));
    return;
  }
  const escape = SURROGATE.test(text) && LONE_SURROGATE.test(text);
  const body = escape ? JSON.stringify(text) : text;
  char(escape ? ESCAPED : STRING);
  varint(body.length);
  out += body;
}

interface Reader {
  text: string;
  at: number;
  strings: string[];
}

/** Decodes what packJson wrote with the same `baseMs`. */
export function unpackJson(text: string, baseMs: number): unknown {
  const reader: Reader = { text, at: 0, strings: [] };
  const value = readValue(reader, baseMs);
  if (reader.at !== text.length) throw new Error(`packed JSON: ${text.length - reader.at} characters left over`);
  return value;
}

function next(reader: Reader): number {
  const code = reader.text.charCodeAt(reader.at++);
  if (Number.isNaN(code)) throw new Error('packed JSON: truncated');
  return code;
}

function readVarint(reader: Reader): number {
  let value = 0;
  let scale = 1;
  for (;;) {
    const digit = next(reader);
    if (digit >= 128) throw new Error('packed JSON: not a number digit');
    value += (digit & 63) * scale;
    if (digit < 64) return value;
    scale *= 64;
  }
}

const readSigned = (reader: Reader): number => {
  const zigzag = readVarint(reader);
  return zigzag % 2 === 1 ? -(zigzag + 1) / 2 : zigzag / 2;
};

/** The next `length` characters. */
function take(reader: Reader, length: number): string {
  const start = reader.at;
  reader.at += length;
  if (reader.at > reader.text.length) throw new Error('packed JSON: truncated');
  return reader.text.slice(start, reader.at);
}

/** `groups` pairs of 6-bit characters as 3 hex digits each. */
function readHex(reader: Reader, groups: number): string {
  let hex = '';
  for (let group = 0; group < groups; group += 1) {
    const digits = HEX3[(next(reader) << 6) | next(reader)];
    if (digits === undefined) throw new Error('packed JSON: not a hex digit pair');
    hex += digits;
  }
  return hex;
}

const remember = (reader: Reader, text: string): string => {
  if (text.length >= REFERENCED_LENGTH) reader.strings.push(text);
  return text;
};

function readValue(reader: Reader, baseMs: number): unknown {
  const tag = next(reader);
  switch (tag) {
    case NULL:
      return null;
    case FALSE:
      return false;
    case TRUE:
      return true;
    case INT:
      return readSigned(reader);
    case NUMBER:
      return Number(take(reader, readVarint(reader)));
    case ARRAY: {
      const count = readVarint(reader);
      const items: unknown[] = [];
      for (let index = 0; index < count; index += 1) items.push(readValue(reader, baseMs));
      return items;
    }
    case OBJECT: {
      const count = readVarint(reader);
      const object: Record<string, unknown> = {};
      for (let index = 0; index < count; index += 1) {
        const key = readValue(reader, baseMs);
        if (typeof key !== 'string') throw new Error('packed JSON: a key that is not a string');
        // A key such as `__proto__` is an own property, as JSON.parse makes it.
        if (key === '__proto__') Object.defineProperty(object, key, { value: readValue(reader, baseMs), enumerable: true, writable: true, configurable: true });
        else object[key] = readValue(reader, baseMs);
      }
      return object;
    }
    default:
      return readString(tag, reader, baseMs);
  }
}

function readString(tag: number, reader: Reader, baseMs: number): string {
  switch (tag) {
    case WORD: {
      const word = PACKED_DICTIONARY[readVarint(reader)];
      if (word === undefined) throw new Error('packed JSON: a word this release does not know');
      return word;
    }
    case REF: {
      const text = reader.strings[readVarint(reader)];
      if (text === undefined) throw new Error('packed JSON: a reference to nothing');
      return text;
    }
    case HEX24:
      return remember(reader, readHex(reader, 8));
    case UUID: {
      const first = readHex(reader, 10);
      const last = HEX2[(next(reader) << 6) | next(reader)];
      if (last === undefined) throw new Error('packed JSON: not a hex digit pair');
      const hex = first + last;
      return remember(reader, `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`);
    }
    case TIME:
      return remember(reader, new Date(baseMs + readSigned(reader)).toISOString());
    case STRING:
      return remember(reader, take(reader, readVarint(reader)));
    case ESCAPED:
      return remember(reader, JSON.parse(take(reader, readVarint(reader))) as string);
    default:
      throw new Error(`packed JSON: unknown tag ${String(tag)}`);
  }
}
