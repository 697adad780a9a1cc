import { randomBytes } from 'node:crypto';

/** A LAUI is a 24-hex-character ObjectId: 4 bytes of seconds, 5 random bytes, 3 bytes of counter. */
export type Laui = string;

const LAUI_PATTERN = /^[0-9a-f]{24}$/;
const processUnique = randomBytes(5).toString('hex');
let counter = randomBytes(3).readUIntBE(0, 3);

export const isLaui = (value: unknown): value is Laui =>
  typeof value === 'string' && LAUI_PATTERN.test(value);

/** ObjectId layout keeps LAUIs roughly time-ordered, which keeps index inserts cheap. */
export const newLaui = (now: Date = new Date()): Laui => {
  counter = (counter + 1) % 0xffffff;
  const seconds = Math.floor(now.getTime() / 1000).toString(16).padStart(8, '0');
  return seconds + processUnique + counter.toString(16).padStart(6, '0');
};

/**
 * A run's session id (task runs, action runs, hooks): an ObjectId, so the session's log lines go to
 * logs/sessions/<day>/<HHMMSS>.jsonl of the second it started (ops/logging/sessionLogFile.ts reads
 * that second from the id's first 4 bytes; a UUID sent every line to one `other.jsonl` per day).
 */
export const newSessionId = (now: Date = new Date()): string => newLaui(now);
