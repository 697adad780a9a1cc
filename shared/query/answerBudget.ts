import type { QueryResult } from '../ports/QueryTarget.ts';

/**
 * The bound on an answer of POST /api/v1/query/execute (spec 4.10, 8): at most `maxRows` rows and at
 * most `maxBytes` bytes of JSON (QUERY_MAX_BYTES), the body exactly as the route sends it. Targets
 * offer their rows one at a time, as they read them, and stop reading as soon as the budget says so.
 *
 * The rule:
 *  - rows are taken in order while the answer, with the row, stays within `maxBytes`;
 *  - the first row that would take it past is not returned: rows stop there, truncated true;
 *  - except when no row was taken yet: then that row's values are cut so that it fits (a value that
 *    alone is larger than the bound is cut), each cut value becoming the start of its text followed by
 *    the marker `…[value cut: N bytes]` (N: the value's whole size in UTF-8 bytes, as the database
 *    sent it), and that row is the last one (truncated true);
 *  - a target that cut a value on the wire already (ops/query wire guards: the driver never builds a
 *    value larger than the bound) passes a text that ends with the marker; it is cut again if need be,
 *    keeping the database's N.
 */

export const cutMarker = (totalBytes: number): string => `…[value cut: ${totalBytes} bytes]`;

/** A text that ends with cutMarker: the N it names, else null. */
export const cutTotalOf = (text: string): number | null => {
  const match = /…\[value cut: (\d+) bytes\]$/.exec(text.slice(-48));
  return match ? Number(match[1]) : null;
};

/** Bytes of `text` once written as a JSON string (quotes included), in UTF-8: what JSON.stringify then UTF-8 would give. */
export const jsonStringBytes = (text: string): number => {
  let bytes = 2;
  for (let index = 0; index < text.length; index += 1) bytes += charCost(text, index);
  return bytes;
};

/** JSON bytes of the character at `index` (a surrogate pair counts 4 on its high half, 0 on its low one). */
const charCost = (text: string, index: number): number => {
  const code = text.charCodeAt(index);
  if (code === 0x22 || code === 0x5c) return 2;
  if (code < 0x20) return code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d ? 2 : 6;
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  if (code >= 0xd800 && code <= 0xdbff) {
    const next = text.charCodeAt(index + 1);
    return next >= 0xdc00 && next <= 0xdfff ? 4 : 6;
  }
  if (code >= 0xdc00 && code <= 0xdfff) {
    const previous = index > 0 ? text.charCodeAt(index - 1) : 0;
    return previous >= 0xd800 && previous <= 0xdbff ? 0 : 6;
  }
  return 3;
};

/**
 * Bytes of `value` in JSON (UTF-8), counted without writing it: a 32 MiB string is measured where
 * JSON.stringify would make another 32 MiB string per measure. Values are what targets answer
 * (strings, numbers, booleans, null, arrays and plain objects from JSON); anything else is written.
 */
export const jsonBytes = (value: unknown): number => {
  if (value === null || value === undefined) return 4;
  switch (typeof value) {
    case 'string':
      return jsonStringBytes(value);
    case 'boolean':
      return value ? 4 : 5;
    case 'number':
      return Number.isFinite(value) ? String(value).length : 4;
    case 'object': {
      if (Array.isArray(value)) return value.reduce<number>((sum, item) => sum + jsonBytes(item), 2 + Math.max(0, value.length - 1));
      if (Object.getPrototypeOf(value) !== Object.prototype) break;
      const entries = Object.entries(value as Record<string, unknown>).filter(([, item]) => item !== undefined && typeof item !== 'function');
      return entries.reduce((sum, [key, item]) => sum + jsonStringBytes(key) + 1 + jsonBytes(item), 2 + Math.max(0, entries.length - 1));
    }
    default:
      break;
  }
  return Buffer.byteLength(JSON.stringify(value) ?? 'null', 'utf8');
};

/** The text a value is cut from: strings as they are, anything else as its JSON. */
const textOf = (value: unknown): string => (typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null'));
const cuttable = (value: unknown): boolean => typeof value === 'string' || (typeof value === 'object' && value !== null);

/** `value` cut so that its JSON takes at most `bytes` bytes with the marker, or null when not even the marker fits. */
export const cutValue = (value: unknown, bytes: number): string | null => {
  let text = textOf(value);
  const wireTotal = cutTotalOf(text);
  const total = wireTotal ?? Buffer.byteLength(text, 'utf8');
  if (wireTotal !== null) text = text.slice(0, text.lastIndexOf('…[value cut: '));
  const marker = cutMarker(total);
  let room = bytes - jsonStringBytes(marker);
  if (room < 0) return null;
  let end = 0;
  while (end < text.length) {
    // A surrogate pair is kept or cut whole: charCost counts it on its first half.
    const cost = charCost(text, end);
    const width = isHighSurrogatePair(text, end) ? 2 : 1;
    if (cost > room) break;
    room -= cost;
    end += width;
  }
  return text.slice(0, end) + marker;
};

const isHighSurrogatePair = (text: string, index: number): boolean => {
  const code = text.charCodeAt(index);
  const next = text.charCodeAt(index + 1);
  return code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff;
};

/** The smallest a value can be made: its cut form with nothing kept, or itself when it cannot be cut or is smaller. */
const smallest = (value: unknown): number => {
  const whole = jsonBytes(value);
  if (!cuttable(value)) return whole;
  const text = textOf(value);
  return Math.min(whole, jsonStringBytes(cutMarker(cutTotalOf(text) ?? Buffer.byteLength(text, 'utf8'))));
};

export class AnswerBudget {
  readonly rows: unknown[][] = [];
  private used: number;
  private stopped: 'rows' | 'bytes' | null = null;

  constructor(
    private readonly limits: { maxRows: number; maxBytes: number },
    columns: ReadonlyArray<string> = [],
  ) {
    this.used = envelopeBytes(columns, limits.maxRows);
  }

  /** The columns are known (some drivers only tell them with the first row): they count too. */
  setColumns(columns: ReadonlyArray<string>): void {
    if (this.rows.length === 0) this.used = envelopeBytes(columns, this.limits.maxRows);
  }

  /** Why rows stopped: past maxRows, or past maxBytes; null while rows may still come. */
  get stoppedBy(): 'rows' | 'bytes' | null {
    return this.stopped;
  }

  get truncated(): boolean {
    return this.stopped !== null;
  }

  /** Takes `row` if it fits; false when rows stop here (the caller stops reading). */
  offer(row: unknown[]): boolean {
    if (this.stopped !== null) return false;
    if (this.rows.length >= this.limits.maxRows) {
      this.stopped = 'rows';
      return false;
    }
    const separator = this.rows.length === 0 ? 0 : 1;
    const size = jsonBytes(row) + separator;
    if (this.used + size <= this.limits.maxBytes) {
      this.rows.push(row);
      this.used += size;
      return true;
    }
    this.stopped = 'bytes';
    if (this.rows.length === 0) {
      const cut = this.cutToFit(row, this.limits.maxBytes - this.used);
      if (cut !== null) this.rows.push(cut);
    }
    return false;
  }

  /** Rows stop here whatever comes next (a target cut a row on the wire: the read ends after it). */
  stop(): void {
    this.stopped ??= 'bytes';
  }

  /** Bytes of the answer so far. */
  get bytes(): number {
    return this.used;
  }

  /** The answer: the rows taken, truncated when rows stopped at either bound. */
  answer(columns: string[]): QueryResult {
    return { columns, rows: this.rows, row_count: this.rows.length, truncated: this.truncated };
  }

  /** `row` with values cut, in order, so that its JSON takes at most `room` bytes; null when it cannot. */
  private cutToFit(row: unknown[], room: number): unknown[] | null {
    const brackets = 2 + Math.max(0, row.length - 1);
    let left = room - brackets;
    const minimal = row.map(smallest);
    let reserve = minimal.reduce((sum, size) => sum + size, 0);
    const out: unknown[] = [];
    for (const [index, value] of row.entries()) {
      reserve -= minimal[index] as number;
      const size = jsonBytes(value);
      if (size <= left - reserve) {
        out.push(value);
        left -= size;
        continue;
      }
      if (!cuttable(value)) return null;
      const cut = cutValue(value, left - reserve);
      if (cut === null) return null;
      out.push(cut);
      left -= jsonStringBytes(cut);
    }
    this.used += room - left;
    return out;
  }
}

/** `{"columns":[...],"rows":[],"row_count":<maxRows>,"truncated":false}`: the answer without rows (row_count at its widest). */
const envelopeBytes = (columns: ReadonlyArray<string>, maxRows: number): number => jsonBytes({ columns, rows: [], row_count: maxRows, truncated: false });
