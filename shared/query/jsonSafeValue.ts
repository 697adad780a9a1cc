/**
 * The JSON-safe form of a value a database driver gave (spec 4.10 rows are JSON): what
 * JSON.stringify would lose or refuse becomes a string, recursively through arrays and objects.
 *  - integers beyond 2^53 - 1 (bigint, or a driver's decimal string) -> their decimal string;
 *  - NaN and the infinities -> "NaN", "Infinity", "-Infinity";
 *  - Date -> ISO 8601 (UTC, `Z`); an invalid date -> null;
 *  - bytes (Buffer, Uint8Array) -> base64;
 *  - undefined -> null.
 * Targets convert their own types first (timestamps keeping microseconds, decimals: decimalValue).
 */
export const jsonSafeValue = (value: unknown): unknown => {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : String(value);
    case 'bigint':
      return safeInteger(value);
    case 'object':
      if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
      if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
      if (Array.isArray(value)) return value.map(jsonSafeValue);
      return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, jsonSafeValue(inner)]));
    default:
      return String(value);
  }
};

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A number while exact (|n| <= 2^53 - 1), else its decimal string. */
export const safeInteger = (value: bigint): number | string => (value <= MAX_SAFE && value >= -MAX_SAFE ? Number(value) : value.toString());

/** Decimal digits a double carries exactly through a decimal round trip. */
const EXACT_DIGITS = 15;

/**
 * A decimal's text (NUMERIC, DECIMAL, BIGINT as text) as a number when a double holds it exactly
 * (at most 15 significant digits), else the text unchanged: 12.50 -> 12.5, but
 * 12345678901234567.89 stays a string. NaN and infinities stay strings.
 */
export const decimalValue = (text: string): number | string => {
  const match = /^[+-]?(\d*)(?:\.(\d*))?(?:[eE][+-]?\d+)?$/.exec(text);
  if (!match) return text;
  const digits = `${match[1] ?? ''}${match[2] ?? ''}`.replace(/^0+/, '').replace(/0+$/, '');
  if (digits.length > EXACT_DIGITS) return text;
  const value = Number(text);
  return Number.isFinite(value) ? value : text;
};
