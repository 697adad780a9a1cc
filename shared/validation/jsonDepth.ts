/**
 * How deep a JSON value may nest. Request bodies deeper than this are refused by the body parser
 * (422, see ops/http/bodyParser.ts), and values read back from the log are clamped to it.
 *
 * Why a bound at all: JSON.parse is iterative in V8, but nearly everything after it recurses once
 * per level (JSON.stringify, structuredClone, ajv, templating, error rendering) and overflows the
 * stack somewhere between 3,000 and 5,000 levels. 64 is far beyond any payload a pipeline needs and
 * far below any stack. Not configurable on purpose: raising it re-opens the overflow, and lowering
 * it would make items already stored unreadable through the clamp.
 *
 * Depth counts containers: `1` and `"x"` are 0 deep, `{}` and `[]` 1, `{"a": [1]}` 2.
 */
export const JSON_MAX_DEPTH = 64;

/** What a subtree beyond the bound is replaced with when a stored value is clamped. */
export const TOO_DEEP = `[nested deeper than ${JSON_MAX_DEPTH} levels: removed]`;

const isContainer = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object';

/**
 * True when `value` nests deeper than `maxDepth`. Recurses at most `maxDepth + 1` frames (it stops
 * at the first container found below the bound), so it is safe on any input, however deep.
 */
export const exceedsDepth = (value: unknown, maxDepth: number = JSON_MAX_DEPTH): boolean => {
  if (!isContainer(value)) return false;
  if (maxDepth <= 0) return true;
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) if (isContainer(item) && exceedsDepth(item, maxDepth - 1)) return true;
    return false;
  }
  for (const key in value) {
    const child = value[key];
    if (isContainer(child) && exceedsDepth(child, maxDepth - 1)) return true;
  }
  return false;
};

const clamped = (value: unknown, remaining: number): unknown => {
  if (!isContainer(value)) return value;
  if (remaining <= 0) return TOO_DEEP;
  if (Array.isArray(value)) return (value as unknown[]).map((item) => clamped(item, remaining - 1));
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) Object.defineProperty(copy, key, { value: clamped(value[key], remaining - 1), enumerable: true, writable: true, configurable: true });
  return copy;
};

/**
 * `value` itself when it is within `maxDepth` (the usual case: one bounded walk, no copy), else a
 * copy in which every container below the bound is replaced by the TOO_DEEP marker. For values
 * that did not come through the body parser: events written before the bound existed.
 */
export const clampDepth = <T>(value: T, maxDepth: number = JSON_MAX_DEPTH): T => (exceedsDepth(value, maxDepth) ? (clamped(value, maxDepth) as T) : value);
