/**
 * Text values from the warehouses (Athena, Redshift Data, BigQuery all answer with strings for
 * most types) made JSON-safe by the same rules as the embedded engine's converter
 * (query-side/logs/jsonSafeValues.ts): integers as numbers while exact, else decimal strings;
 * decimals as numbers up to 15 digits of precision, strings beyond; timestamps as ISO 8601 instants
 * (a timestamp without zone is read as UTC, as DuckDB's are); binary as base64; NaN and the
 * infinities as strings.
 */

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export const integerValue = (text: string): number | string => {
  if (!/^[+-]?\d+$/.test(text)) return text;
  const big = BigInt(text);
  return big <= MAX_SAFE && big >= -MAX_SAFE ? Number(big) : big.toString();
};

export const floatValue = (text: string): number | string => {
  const value = Number(text);
  return text.trim() !== '' && Number.isFinite(value) ? value : text;
};

/** A decimal of `precision` digits: a number while a double holds it exactly (15 digits), else its text. */
export const decimalValue = (text: string, precision: number | undefined): number | string => {
  if (precision === undefined || precision > 15) return text;
  return floatValue(text);
};

export const booleanValue = (text: string): boolean | string => (text === 'true' ? true : text === 'false' ? false : text);

const TIMESTAMP = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(\.\d+)?\s*(Z|UTC|[+-]\d{2}(?::?\d{2})?)?$/;

/** "2024-05-01 10:00:00.123" (no zone: UTC), "... UTC", "...+02:00" as ISO 8601 with Z; anything else unchanged. */
export const timestampValue = (text: string): string => {
  const match = TIMESTAMP.exec(text.trim());
  if (!match) return text;
  const [, date, time, fraction = '', zone] = match;
  if (zone === undefined || zone === 'Z' || zone === 'UTC' || /^[+-]00:?(00)?$/.test(zone)) return `${date}T${time}${fraction}Z`;
  const offset = zone.length === 3 ? `${zone}:00` : zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const instant = new Date(`${date}T${time}${fraction.slice(0, 4)}${offset}`);
  return Number.isNaN(instant.getTime()) ? text : instant.toISOString();
};

/** Microseconds since the epoch (BigQuery's int64 timestamps) as ISO 8601 with Z, keeping microseconds. */
export const timestampFromMicros = (text: string): string => {
  if (!/^-?\d+$/.test(text)) return text;
  const micros = BigInt(text);
  let millis = micros / 1000n;
  if (micros % 1000n !== 0n && micros < 0n) millis -= 1n;
  const date = new Date(Number(millis));
  if (Number.isNaN(date.getTime())) return text;
  const iso = date.toISOString();
  const sub = micros - millis * 1000n;
  return sub === 0n ? iso : `${iso.slice(0, -1)}${sub.toString().padStart(3, '0')}Z`;
};

/** Athena's varbinary text ("68 65 6c 6c 6f") as base64. */
export const hexBytesToBase64 = (text: string): string => {
  const hex = text.replace(/\s+/g, '');
  return /^([0-9a-fA-F]{2})*$/.test(hex) ? Buffer.from(hex, 'hex').toString('base64') : text;
};
