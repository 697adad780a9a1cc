import { cutTotalOf } from '../../shared/query/answerBudget.ts';
import { decimalValue, safeInteger } from '../../shared/query/jsonSafeValue.ts';

/**
 * PostgreSQL values as POST /query/execute answers them (JSON-safe, README "Query values"),
 * parsed from the text format. The session is opened with DateStyle ISO, TimeZone UTC and
 * IntervalStyle iso_8601 (PostgresTarget), so the texts below are in known shapes:
 *  - smallint, integer, oid, real, double: numbers (NaN and infinities as strings);
 *  - bigint: a number while exact (|n| <= 2^53 - 1), else its decimal string;
 *  - numeric: a number up to 15 significant digits, else its exact decimal string;
 *  - boolean: true / false; json, jsonb: the parsed value;
 *  - timestamptz: ISO 8601 in UTC (`2024-05-01T10:00:00.123456Z`, microseconds kept);
 *    timestamp (no zone): ISO 8601 without offset; date: `YYYY-MM-DD`; infinity and BC dates as
 *    PostgreSQL writes them;
 *  - interval: an ISO 8601 duration (`P1DT2H`); time, timetz: as written;
 *  - bytea: base64;
 *  - arrays of these: arrays of the converted elements (NULL -> null);
 *  - anything else (text, uuid, inet, enums, geometric, range, domain and user types): the text;
 *  - a value that does not parse as its type says, or that was cut at the answer's bound: the text.
 */

type Parser = (text: string) => unknown;

const finiteOrText = (text: string): number | string => {
  const value = Number(text);
  return Number.isFinite(value) ? value : text;
};

const ISO_INSTANT = /^(\d{4,})-(\d\d)-(\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)(?:([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?)?$/;

/** `2024-05-01 10:00:00.5+00` -> `2024-05-01T10:00:00.5Z`; another offset kept as ±HH:MM[:SS]; no offset: none. */
export const isoTimestamp = (text: string): string => {
  const match = ISO_INSTANT.exec(text);
  if (!match) return text;
  const [, year, month, day, time, sign, hours, minutes, seconds] = match;
  const base = `${year}-${month}-${day}T${time}`;
  if (sign === undefined) return base;
  if (hours === '00' && (minutes ?? '00') === '00' && (seconds ?? '00') === '00') return `${base}Z`;
  return `${base}${sign}${hours}:${minutes ?? '00'}${seconds === undefined ? '' : `:${seconds}`}`;
};

/** bytea's hex output (`\x0102`, bytea_output hex) as base64; the old escape format is passed as text. */
const bytea = (text: string): string => (text.startsWith('\\x') ? Buffer.from(text.slice(2), 'hex').toString('base64') : text);

const SCALARS: ReadonlyMap<number, Parser> = new Map<number, Parser>([
  [16, (text) => text === 't'],
  [17, bytea],
  [20, (text) => safeInteger(BigInt(text))],
  [21, Number],
  [23, Number],
  [26, Number],
  [700, finiteOrText],
  [701, finiteOrText],
  [1700, decimalValue],
  [114, (text) => JSON.parse(text) as unknown],
  [3802, (text) => JSON.parse(text) as unknown],
  [1114, isoTimestamp],
  [1184, isoTimestamp],
]);

/** Array type oid -> its element's oid (those with a converted element; others stay text). */
const ARRAYS: ReadonlyMap<number, number> = new Map([
  [1000, 16],
  [1001, 17],
  [1016, 20],
  [1005, 21],
  [1007, 23],
  [1028, 26],
  [1021, 700],
  [1022, 701],
  [1231, 1700],
  [199, 114],
  [3807, 3802],
  [1115, 1114],
  [1185, 1184],
  [1009, 25],
  [1015, 1043],
  [1014, 1042],
  [1182, 1082],
  [2951, 2950],
  [1187, 1186],
]);

/**
 * PostgreSQL's array text (`{1,NULL,"a,b",{2,3}}`, optionally after `[1:2]=`) as nested arrays,
 * each non-NULL element through `element`. Delimiter `,` (every type above uses it).
 */
export const parsePgArray = (text: string, element: Parser): unknown => {
  let at = text.startsWith('[') ? text.indexOf('=') + 1 : 0;
  const parseLevel = (): unknown[] => {
    const items: unknown[] = [];
    at += 1; // '{'
    if (text[at] === '}') {
      at += 1;
      return items;
    }
    for (;;) {
      if (text[at] === '{') {
        items.push(parseLevel());
      } else if (text[at] === '"') {
        let value = '';
        at += 1;
        while (at < text.length && text[at] !== '"') {
          if (text[at] === '\\') at += 1;
          value += text[at] ?? '';
          at += 1;
        }
        at += 1;
        items.push(element(value));
      } else {
        const start = at;
        while (at < text.length && text[at] !== ',' && text[at] !== '}') at += 1;
        const raw = text.slice(start, at);
        items.push(raw === 'NULL' ? null : element(raw));
      }
      if (text[at] === ',') {
        at += 1;
        continue;
      }
      at += 1; // '}'
      return items;
    }
  };
  if (text[at] !== '{') return text;
  return parseLevel();
};

const identity: Parser = (text) => text;

/**
 * `parse`, made total: pg calls it in its socket handler, where a throw (JSON.parse of a malformed
 * json value from a hostile server, BigInt of junk) would end the process. A text the wire guard cut
 * (it ends with the cut marker) is not parsed: it is returned as the database wrote it, cut.
 */
const total =
  (parse: Parser): Parser =>
  (text) => {
    if (text.endsWith(' bytes]') && cutTotalOf(text) !== null) return text;
    try {
      return parse(text);
    } catch {
      return text;
    }
  };

/** The parser of a column type, for pg's `types.getTypeParser` (text format; the target never asks for binary). */
export const pgTypeParser = (oid: number): Parser => {
  const scalar = SCALARS.get(oid);
  if (scalar) return total(scalar);
  const element = ARRAYS.get(oid);
  if (element !== undefined) {
    const parse = SCALARS.get(element) ?? identity;
    return total((text) => parsePgArray(text, parse));
  }
  return identity;
};
