import type { Position } from '../event-store/EventStore.ts';

/**
 * Read-your-writes: a command returns the position of its events; the API waits (bounded) until
 * the read models have applied that position before it answers.
 */
export interface ReadModelProgress {
  waitFor(position: Position, timeoutMs: number): Promise<boolean>;
}
