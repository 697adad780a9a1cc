import type { ErrorDetail } from '../errors.ts';

interface Bounds {
  depth: number;
  items: number;
  chars: number;
}

/** The `input` a 422 entry echoes: enough to recognise the value, never the whole of a big one. */
export const INPUT_BOUNDS: Bounds = { depth: 3, items: 10, chars: 200 };
/** Everything else in an error body (messages, lists of allowed values) is ours, but may quote input. */
const DETAIL_BOUNDS: Bounds = { depth: 8, items: 1000, chars: 32_768 };

const truncate = (text: string, chars: number): string => (text.length <= chars ? text : `${text.slice(0, chars)}… (${text.length} characters)`);

/**
 * A copy of `value` cut to `bounds`: long strings shortened, long lists and objects cut (with a
 * note of how many entries were left out), containers below the depth replaced by `[…]`/`{…}`.
 * Recurses at most `bounds.depth` frames whatever the input; never calls a value's own methods
 * (a `toString` that is not a function must not break an error body).
 */
export const bounded = (value: unknown, bounds: Bounds = INPUT_BOUNDS, inInput = bounds === INPUT_BOUNDS): unknown => {
  if (typeof value === 'string') return truncate(value, bounds.chars);
  if (value === null || typeof value !== 'object') return typeof value === 'bigint' || typeof value === 'symbol' || typeof value === 'function' ? null : value;
  if (Array.isArray(value)) {
    if (bounds.depth <= 0) return '[…]';
    const inner = { ...bounds, depth: bounds.depth - 1 };
    const kept = (value as unknown[]).slice(0, bounds.items).map((item) => bounded(item, inner, inInput));
    if (value.length > bounds.items) kept.push(`… (${value.length - bounds.items} more)`);
    return kept;
  }
  if (bounds.depth <= 0) return '{…}';
  const inner = { ...bounds, depth: bounds.depth - 1 };
  const keys = Object.keys(value);
  const copy: Record<string, unknown> = {};
  for (const key of keys.slice(0, bounds.items)) {
    const child = (value as Record<string, unknown>)[key];
    // An entry's `input` is the caller's value: it gets the tight bounds wherever it sits.
    const shown = key === 'input' && !inInput ? bounded(child, INPUT_BOUNDS, true) : bounded(child, inner, inInput);
    Object.defineProperty(copy, truncate(key, bounds.chars), { value: shown, enumerable: true, writable: true, configurable: true });
  }
  if (keys.length > bounds.items) copy['…'] = `${keys.length - bounds.items} more keys`;
  return copy;
};

/** An error body's detail, bounded for rendering: 422 entries echo at most a summary of their input. */
export const boundedDetail = (detail: ErrorDetail): ErrorDetail => (detail === null ? null : (bounded(detail, DETAIL_BOUNDS) as ErrorDetail));

/**
 * A caller's value quoted in a message: strings as they are (cut at 200 characters), anything else
 * as bounded JSON. Never `String(value)`: an object whose `toString` is not a function (`{"toString":
 * "x"}` from a JSON body) makes that throw, and turned 422s into 500s.
 */
export const quoted = (value: unknown): string => {
  if (typeof value === 'string') return truncate(value, INPUT_BOUNDS.chars);
  return JSON.stringify(bounded(value)) ?? 'undefined';
};

/** The longest summary of another system's failure an answer carries (summarised). */
export const UPSTREAM_MESSAGE_CHARS = 200;

/**
 * Another system's failure (an AI provider, a query target, a chat's own module) as an answer may
 * quote it: control and format characters (newlines, escapes, bidi overrides) become spaces, runs of
 * spaces one, and the whole is cut to `chars` characters (an ellipsis included), by code point. That
 * system may be one the caller pointed the service at (a chat's base_url, a connection's host): its
 * answer is never relayed beyond this summary.
 */
export const summarised = (text: string, chars: number = UPSTREAM_MESSAGE_CHARS): string => {
  const clean = text.replace(/[\p{Cc}\p{Cf}\u2028\u2029]+/gu, ' ').replace(/\s+/g, ' ').trim();
  const points = Array.from(clean);
  return points.length <= chars ? clean : `${points.slice(0, chars - 1).join('')}…`;
};
