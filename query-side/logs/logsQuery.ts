import { validateRequest } from '../../shared/validation/validateRequest.ts';
import type { SessionContentQuery } from './readSessionPage.ts';
import type { LogFileQuery } from './streamLogFile.ts';

/** Bounds of spec 4.9 and section 8. */
export const FILE_LIMIT_MAX = 5000;
export const FILE_LIMIT_DEFAULT = 200;
export const CONTENT_PER_PAGE_MAX = 500;
export const CONTENT_PER_PAGE_DEFAULT = 50;

export const fileSchema = {
  type: 'object',
  properties: {
    reverse: { type: 'boolean', default: false },
    skip: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 },
    limit: { type: 'integer', minimum: 1, maximum: FILE_LIMIT_MAX, default: FILE_LIMIT_DEFAULT },
  },
} as const;

export const contentSchema = {
  type: 'object',
  properties: {
    level: { type: 'string' },
    category: { type: 'string' },
    page: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 1 },
    per_page: { type: 'integer', minimum: 1, maximum: CONTENT_PER_PAGE_MAX, default: CONTENT_PER_PAGE_DEFAULT },
  },
} as const;

const INTEGER = /^-?\d{1,20}$/;
/** The spellings of a boolean query value clients send (`reverse=true`, `reverse=1`...). */
const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

/**
 * Query strings arrive as text (a repeated parameter as a list: its last value counts). Integers and
 * booleans that parse become numbers and booleans; anything else stays text and the schema reports
 * it as the wrong type. Only the route's own parameters are kept: others are ignored, as the rest
 * of the API does, and a `__proto__` key never lands on the result.
 */
const coerce = (raw: Record<string, unknown>, kinds: Readonly<Record<string, 'integer' | 'boolean' | 'string'>>): Record<string, unknown> => {
  const result: Record<string, unknown> = {};
  for (const [key, kind] of Object.entries(kinds)) {
    if (!Object.hasOwn(raw, key)) continue;
    const value = raw[key];
    const text = Array.isArray(value) ? value.at(-1) : value;
    if (kind === 'integer' && typeof text === 'string' && INTEGER.test(text)) result[key] = Number(text);
    else if (kind === 'boolean' && typeof text === 'string' && TRUE.has(text.toLowerCase())) result[key] = true;
    else if (kind === 'boolean' && typeof text === 'string' && FALSE.has(text.toLowerCase())) result[key] = false;
    else result[key] = text;
  }
  return result;
};

/**
 * GET /logs/file query: reverse, skip (>= 0), limit (1-5000). Bounds are checked whatever the mode
 * (skip and limit are used in reverse mode only, but a wrong value is a mistake either way): 422 in
 * the list form, before any stream starts.
 */
export const parseLogFileQuery = (raw: Record<string, unknown>): LogFileQuery =>
  validateRequest<LogFileQuery>(fileSchema, coerce(raw, { reverse: 'boolean', skip: 'integer', limit: 'integer' }), 'query');

/** GET /logs/session/{id}/content query: level, category, page (>= 1), per_page (1-500); 422 in the list form. */
export const parseSessionContentQuery = (raw: Record<string, unknown>): SessionContentQuery =>
  validateRequest<SessionContentQuery>(contentSchema, coerce(raw, { level: 'string', category: 'string', page: 'integer', per_page: 'integer' }), 'query');
