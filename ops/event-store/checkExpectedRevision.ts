import {
  expectedRevisionHolds,
  WrongExpectedVersionError,
  type ExpectedRevision,
} from '../../shared/event-store/EventStore.ts';

/**
 * The precondition of every adapter's append. Returns the stream's last revision, -1 when it has
 * none, which is both the base of the revisions to write and the answer to an empty append.
 */
export function checkExpectedRevision(
  streamId: string,
  expected: ExpectedRevision,
  actual: number | 'no_stream',
): number {
  if (!expectedRevisionHolds(expected, actual)) {
    throw new WrongExpectedVersionError(streamId, expected, actual);
  }
  return actual === 'no_stream' ? -1 : actual;
}
