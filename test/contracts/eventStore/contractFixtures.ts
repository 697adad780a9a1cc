import { expect } from 'chai';
import {
  WrongExpectedVersionError,
  type AppendResult,
  type EventStore,
  type RecordedEvent,
} from '../../../shared/event-store/EventStore.ts';
import type { EventToAppend } from '../../../shared/events.ts';

/** The store under test, created fresh for each test by the contract's beforeEach. */
export type CurrentStore = () => EventStore;

export const anEvent = (n: number, type = 'ThingHappened'): EventToAppend => ({
  type,
  data: { n },
  metadata: { user_laui: null, correlation_id: `correlation-${n}`, causation_id: null, at: '2024-05-01T10:00:00.000Z' },
});

export const someEvents = (count: number, firstN = 0): EventToAppend[] =>
  Array.from({ length: count }, (_, index) => anEvent(firstN + index));

/** A stream whose last revision is `revision` (revision + 1 events). */
export const givenStreamAt = (store: EventStore, streamId: string, revision: number): Promise<AppendResult> =>
  store.append(streamId, someEvents(revision + 1), 'no_stream');

/** Asserts that the append rejected with a conflict and hands the error back for its fields. */
export async function expectConflict(append: Promise<unknown>): Promise<WrongExpectedVersionError> {
  try {
    await append;
  } catch (error) {
    expect(error).to.be.instanceOf(WrongExpectedVersionError);
    return error as WrongExpectedVersionError;
  }
  expect.fail('expected the append to be rejected with WrongExpectedVersionError');
}

export const numbersOf = (events: ReadonlyArray<RecordedEvent>): unknown[] => events.map((event) => event.data.n);

export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `condition` holds; the deadline only ends a wait that would never succeed (generous for a loaded machine). */
export async function waitUntil(condition: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) expect.fail(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await delay(5);
  }
}

export function expectStrictlyIncreasing(positions: ReadonlyArray<bigint>): void {
  for (let index = 1; index < positions.length; index += 1) {
    const previous = positions[index - 1] ?? 0n;
    const current = positions[index] ?? 0n;
    expect(current > previous, `position ${current} after ${previous}`).to.equal(true);
  }
}
