import { ANY, ErrorType, isCommandError, NO_STREAM, STREAM_EXISTS, type AppendStreamState, type CurrentStreamState } from '@kurrent/kurrentdb-client';
import { WrongExpectedVersionError, type ExpectedRevision } from '../../../shared/event-store/EventStore.ts';

/*
 * Stream revisions at the edge of KurrentDB. Both sides number a stream's events from 0 and name
 * the same three states (any, no stream, stream exists); the client counts in bigint, we in
 * number (2^53 events in one stream is beyond any aggregate of ours).
 */

/** A revision the server can be asked to check: a non-negative safe integer. */
export const isRevision = (expected: ExpectedRevision): expected is number => typeof expected === 'number' && Number.isSafeInteger(expected) && expected >= 0;

/** The client's expected stream state for ours. Only for revisions isRevision accepts. */
export const streamStateOf = (expected: ExpectedRevision): AppendStreamState => {
  switch (expected) {
    case 'any':
      return ANY;
    case 'no_stream':
      return NO_STREAM;
    case 'stream_exists':
      return STREAM_EXISTS;
    default:
      if (!isRevision(expected)) throw new RangeError(`Not a stream revision: ${expected}`);
      return BigInt(expected);
  }
};

/** A revision the server reported, as ours; refuses one that a number cannot hold exactly. */
export const revisionOf = (revision: bigint): number => {
  const value = Number(revision);
  if (!Number.isSafeInteger(value)) throw new RangeError(`KurrentDB reported revision ${revision}, beyond what this service can hold`);
  return value;
};

const actualOf = (state: CurrentStreamState): number | 'no_stream' => (state === NO_STREAM ? 'no_stream' : revisionOf(state));

/**
 * The store-neutral conflict for the client's WrongExpectedVersionError (null for any other
 * error), with the revision the stream was actually at, as every adapter reports it. Recognized by
 * the client's own error type tag rather than by class, which a second copy of the client in
 * node_modules would not share.
 */
export const conflictOf = (error: unknown, streamId: string, expected: ExpectedRevision): WrongExpectedVersionError | null => {
  if (!(error instanceof Error) || !isCommandError(error) || error.type !== ErrorType.WRONG_EXPECTED_VERSION) return null;
  return new WrongExpectedVersionError(streamId, expected, actualOf(error.actualState));
};

/**
 * The client's read of an inclusive revision range (readStreamBounds): from `from`, at most
 * `to - from + 1` events (no limit for an open range), or null for an empty range. Bounds are
 * revisions, so whole numbers; a fraction is floored rather than thrown at by BigInt.
 */
export const revisionRange = (bounds: { from: number; to: number }): { fromRevision: bigint; maxCount?: number } | null => {
  const from = Math.floor(bounds.from);
  const to = Math.floor(bounds.to);
  if (to < from) return null;
  return to >= Number.MAX_SAFE_INTEGER ? { fromRevision: BigInt(from) } : { fromRevision: BigInt(from), maxCount: to - from + 1 };
};
