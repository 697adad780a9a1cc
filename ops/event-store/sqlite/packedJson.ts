/**
 * The compact encoding of the `log` table's data and metadata (migrateEventStoreSchema.ts, schema
 * 2): a JSON value (what JSON.parse returns) as bytes, read back to an equal value, key order
 * kept. What makes it small, on the events the service writes most (a run's six):
 * - keys and frequent values (task states, field names) are one byte, from PACKED_DICTIONARY;
 * - 24-hex ids (lauis) take 12 bytes, canonical UUIDs 16, both in hex text 24 and 36;
 * - ISO timestamps (`2026-01-01T00:00:00.000Z`) are their distance in ms from the row's commit
 *   time, usually a byte or two: the times an event carries are its command's time;
 * - a string repeated within one value (a dispatch id copied into two fields) is a reference
 *   to its first occurrence.
 *
 * Format: a value is a tag byte and its body. Integers and lengths are unsigned LEB128 varints,
 * signed ones zigzag-encoded first. The dictionary is append-only: a released index never
 * changes meaning (files in the field hold it).
 */

const NULL = 0;
const FALSE = 1;
const TRUE = 2;
const INT = 3; // zigzag varint: an integer of at most MAX_VARINT_INTEGER either way
const FLOAT = 4; // 8 bytes, little-endian float64
const STRING = 5; // varint byte length + UTF-8
const HEX24 = 6; // 12 bytes: a 24-char lowercase hex string
const UUID = 7; // 16 bytes: a canonical lowercase UUID
const TIME = 8; // zigzag varint: ms from the base time, an ISO-8601 UTC timestamp with ms
const WORD = 9; // varint: index in PACKED_DICTIONARY
const REF = 10; // varint: index of an earlier string of this value (see REFERENCED_LENGTH)
const ARRAY = 11; // varint count + values
const OBJECT = 12; // varint count + (key, value) pairs, keys encoded as strings

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

/** The ms of an ISO timestamp that reads back exactly as written, else NaN. */
export const exactTimeMs = (text: string): number => {
  if (text.length !== 24 || !TIME_PATTERN.test(text)) return NaN;
  const ms = Date.parse(text);
  return Number.isFinite(ms) && new Date(ms).toISOString() === text ? ms : NaN;
};

/** A growable byte buffer, reused across encodings (one encoding at a time: the writer is synchronous). */
class Output {
  bytes = Buffer.allocUnsafe(4096);
  length = 0;

  reserve(count: number): void {
    if (this.length + count <= this.bytes.length) return;
    const larger = Buffer.allocUnsafe(Math.max(this.bytes.length * 2, this.length + count));
    this.bytes.copy(larger, 0, 0, this.length);
    this.bytes = larger;
  }

  byte(value: number): void {
    this.reserve(1);
    this.bytes[this.length++] = value;
  }

  varint(value: number): void {
    this.reserve(10);
    let rest = value;
    while (rest >= 0x80) {
      this.bytes[this.length++] = (rest % 0x80) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    this.bytes[this.length++] = rest;
  }

  signed(value: number): void {
    this.varint(value < 0 ? -2 * value - 1 : 2 * value);
  }

  hex(text: string): void {
    this.reserve(text.length / 2);
    this.length += this.bytes.write(text, this.length, 'hex');
  }
}

const output = new Output();

/** Encodes a JSON value; `baseMs` is what timestamps are stored relative to (the commit time). */
export function packJson(value: unknown, baseMs: number): Buffer {
  output.length = 0;
  const seen = new Map<string, number>();
  writeValue(value, baseMs, seen);
  return Buffer.from(output.bytes.subarray(0, output.length));
}

function writeValue(value: unknown, baseMs: number, seen: Map<string, number>): void {
  if (value === null) output.byte(NULL);
  else if (value === true) output.byte(TRUE);
  else if (value === false) output.byte(FALSE);
  else if (typeof value === 'string') writeString(value, baseMs, seen);
  else if (typeof value === 'number') {
    // Up to 2^52 either way: its zigzag form stays a safe integer. Larger ones are exact as float64.
    if (Number.isInteger(value) && Math.abs(value) <= MAX_VARINT_INTEGER) {
      output.byte(INT);
      output.signed(value);
    } else if (Number.isFinite(value)) {
      output.byte(FLOAT);
      output.reserve(8);
      output.length = output.bytes.writeDoubleLE(value, output.length);
    } else output.byte(NULL); // as JSON.stringify writes them
  } else if (Array.isArray(value)) {
    output.byte(ARRAY);
    output.varint(value.length);
    for (const item of value) writeValue(item === undefined ? null : item, baseMs, seen);
  } else if (typeof value === 'object') {
    const object = value as Record<string, unknown>;
    let count = 0;
    for (const key in object) if (object[key] !== undefined) count += 1;
    output.byte(OBJECT);
    output.varint(count);
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
    output.byte(WORD);
    output.varint(word);
    return;
  }
  if (text.length >= REFERENCED_LENGTH) {
    const earlier = seen.get(text);
    if (earlier !== undefined) {
      output.byte(REF);
      output.varint(earlier);
      return;
    }
    seen.set(text, seen.size);
  }
  if (text.length === 24) {
    // 'T' at 10: a timestamp's place (never hex).
    const ms = text.charCodeAt(10) === 84 ? exactTimeMs(text) : NaN;
    if (!Number.isNaN(ms)) {
      output.byte(TIME);
      output.signed(ms - baseMs);
      return;
    }
    if (HEX24_PATTERN.test(text)) {
      output.byte(HEX24);
      output.hex(text);
      return;
    }
  } else if (text.length === 36 && UUID_PATTERN.test(text)) {
    output.byte(UUID);
    output.hex(text.replaceAll('-', ''));
    return;
  }
  const length = Buffer.byteLength(text);
  output.byte(STRING);
  output.varint(length);
  output.reserve(length);
  output.length += output.bytes.write(text, output.length, 'utf8');
}

/** A canonical UUID from its 16 bytes. */
export const uuidOf = (bytes: Buffer, start = 0): string => {
  const hex = bytes.toString('hex', start, start + 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};

/** Decodes what packJson wrote with the same `baseMs`. */
export function unpackJson(bytes: Buffer, baseMs: number): unknown {
  const reader = { at: 0, strings: [] as string[] };
  const value = readValue(bytes, baseMs, reader);
  if (reader.at !== bytes.length) throw new Error(`packed JSON: ${bytes.length - reader.at} bytes left over`);
  return value;
}

interface Reader {
  at: number;
  strings: string[];
}

function readVarint(bytes: Buffer, reader: Reader): number {
  let value = 0;
  let scale = 1;
  for (;;) {
    const byte = bytes[reader.at++];
    if (byte === undefined) throw new Error('packed JSON: truncated');
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value;
    scale *= 0x80;
  }
}

const readSigned = (bytes: Buffer, reader: Reader): number => {
  const zigzag = readVarint(bytes, reader);
  return zigzag % 2 === 1 ? -(zigzag + 1) / 2 : zigzag / 2;
};

const remember = (reader: Reader, text: string): string => {
  if (text.length >= REFERENCED_LENGTH) reader.strings.push(text);
  return text;
};

function readValue(bytes: Buffer, baseMs: number, reader: Reader): unknown {
  const tag = bytes[reader.at++];
  switch (tag) {
    case NULL:
      return null;
    case FALSE:
      return false;
    case TRUE:
      return true;
    case INT:
      return readSigned(bytes, reader);
    case FLOAT: {
      const value = bytes.readDoubleLE(reader.at);
      reader.at += 8;
      return value;
    }
    case ARRAY: {
      const count = readVarint(bytes, reader);
      const items: unknown[] = new Array<unknown>(count);
      for (let index = 0; index < count; index += 1) items[index] = readValue(bytes, baseMs, reader);
      return items;
    }
    case OBJECT: {
      const count = readVarint(bytes, reader);
      const object: Record<string, unknown> = {};
      for (let index = 0; index < count; index += 1) {
        const key = readValue(bytes, baseMs, reader);
        if (typeof key !== 'string') throw new Error('packed JSON: a key that is not a string');
        // A key such as `__proto__` is an own property, as JSON.parse makes it.
        if (key === '__proto__') Object.defineProperty(object, key, { value: readValue(bytes, baseMs, reader), enumerable: true, writable: true, configurable: true });
        else object[key] = readValue(bytes, baseMs, reader);
      }
      return object;
    }
    default:
      return readString(tag, bytes, baseMs, reader);
  }
}

function readString(tag: number | undefined, bytes: Buffer, baseMs: number, reader: Reader): string {
  switch (tag) {
    case WORD: {
      const word = PACKED_DICTIONARY[readVarint(bytes, reader)];
      if (word === undefined) throw new Error('packed JSON: a word this release does not know');
      return word;
    }
    case REF: {
      const text = reader.strings[readVarint(bytes, reader)];
      if (text === undefined) throw new Error('packed JSON: a reference to nothing');
      return text;
    }
    case HEX24: {
      const start = reader.at;
      reader.at += 12;
      return remember(reader, bytes.toString('hex', start, start + 12));
    }
    case UUID: {
      const start = reader.at;
      reader.at += 16;
      return remember(reader, uuidOf(bytes, start));
    }
    case TIME:
      return remember(reader, new Date(baseMs + readSigned(bytes, reader)).toISOString());
    case STRING: {
      const length = readVarint(bytes, reader);
      const start = reader.at;
      reader.at += length;
      if (reader.at > bytes.length) throw new Error('packed JSON: truncated');
      return remember(reader, bytes.toString('utf8', start, start + length));
    }
    default:
      throw new Error(`packed JSON: unknown tag ${String(tag)}`);
  }
}
