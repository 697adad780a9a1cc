import type { DomainEvent } from '../events.ts';

/**
 * Uniqueness across streams (user names, group names, task keys): a reservation is the first
 * event of `unique-<sha256(key)>`, appended expecting no stream, so two concurrent creators
 * cannot both win. A release (hard delete) frees the key for the next reservation.
 */
export type UniqueKeyEvent =
  | DomainEvent<'UniqueKeyReserved', { key: string; owner: string; at: string }>
  | DomainEvent<'UniqueKeyReleased', { key: string; owner: string; at: string }>;
