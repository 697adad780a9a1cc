/** Instant helpers shared by the task functions. Task timestamps are stored as ISO 8601 strings in UTC. */

export const MINUTE_MS = 60_000;

/** A task timestamp as stored (ISO string), as a Date, or absent. */
export type Instant = string | Date | null | undefined;

/** The Date of a stored timestamp; null when absent or unparsable (an unparsable value compares as absent). */
export function toInstant(value: unknown): Date | null {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value;
  if (typeof value !== 'string' || value.trim() === '') return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : new Date(ms);
}

/** The stored form of an instant: `Date.prototype.toISOString` (UTC, millisecond precision, `Z`). */
export const iso = (date: Date): string => date.toISOString();
