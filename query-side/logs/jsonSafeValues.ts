import type { DuckDBDecimalValue, DuckDBValue, DuckDBValueConverter, Json } from '@duckdb/node-api';

type DuckDB = typeof import('@duckdb/node-api');

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A 64/128-bit integer as a number while exact (|n| <= 2^53 - 1), else as its decimal string. */
const integer = (value: DuckDBValue): Json => {
  const big = typeof value === 'bigint' ? value : BigInt(String(value));
  return big <= MAX_SAFE && big >= -MAX_SAFE ? Number(big) : big.toString();
};

/** Floor division, for instants before 1970. */
const floorDiv = (a: bigint, b: bigint): bigint => {
  const quotient = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? quotient - 1n : quotient;
};

/** An instant (microseconds since the epoch, UTC) as ISO 8601 with a Z, keeping microseconds. */
const isoFromMicros = (micros: bigint, fallback: string): string => {
  const millis = floorDiv(micros, 1000n);
  const date = new Date(Number(millis));
  // Outside JavaScript's Date range (and the infinities DuckDB has): DuckDB's own rendering.
  if (Number.isNaN(date.getTime())) return fallback;
  const iso = date.toISOString();
  const subMillis = micros - millis * 1000n;
  return subMillis === 0n ? iso : `${iso.slice(0, -1)}${subMillis.toString().padStart(3, '0')}Z`;
};

/**
 * Values as JSON can carry them: the library's JSON converter (lists as arrays, structs as objects,
 * maps as [{key, value}], NaN and infinities as strings), except that integers are numbers while
 * exact rather than always strings (count(*) is a BIGINT), timestamps are ISO 8601 instants (log
 * timestamps are UTC; DuckDB's "2024-05-01 10:00:00" form is not ISO), and decimals are numbers
 * up to 15 digits (exact in a double), strings beyond. Nested values go through the same rules.
 */
export const jsonSafeConverter = (duckdb: DuckDB): DuckDBValueConverter<Json> => {
  const { DuckDBTypeId, JsonDuckDBValueConverter } = duckdb;
  const convert: DuckDBValueConverter<Json> = (value, type, converter) => {
    if (value === null) return null;
    switch (type.typeId) {
      case DuckDBTypeId.BIGINT:
      case DuckDBTypeId.UBIGINT:
      case DuckDBTypeId.HUGEINT:
      case DuckDBTypeId.UHUGEINT:
        return integer(value);
      case DuckDBTypeId.DECIMAL: {
        const decimal = value as DuckDBDecimalValue;
        return decimal.width <= 15 ? decimal.toDouble() : decimal.toString();
      }
      case DuckDBTypeId.TIMESTAMP:
      case DuckDBTypeId.TIMESTAMP_TZ:
        return isoFromMicros((value as { micros: bigint }).micros, String(value));
      case DuckDBTypeId.TIMESTAMP_S:
        return isoFromMicros((value as { seconds: bigint }).seconds * 1_000_000n, String(value));
      case DuckDBTypeId.TIMESTAMP_MS:
        return isoFromMicros((value as { millis: bigint }).millis * 1000n, String(value));
      case DuckDBTypeId.TIMESTAMP_NS:
        return isoFromMicros(floorDiv((value as { nanos: bigint }).nanos, 1000n), String(value));
      default:
        return JsonDuckDBValueConverter(value, type, converter);
    }
  };
  return convert;
};
