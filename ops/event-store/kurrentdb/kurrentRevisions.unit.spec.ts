import { ANY, NO_STREAM, STREAM_EXISTS, StreamNotFoundError, WrongExpectedVersionError as KurrentConflict } from '@kurrent/kurrentdb-client';
import { expect } from 'chai';
import { WrongExpectedVersionError } from '../../../shared/event-store/EventStore.ts';
import { conflictOf, isRevision, revisionOf, revisionRange, streamStateOf } from './kurrentRevisions.ts';

/** The conflict as the client builds it from the server's WrongExpectedVersion answer. */
const clientConflict = (current: bigint | typeof NO_STREAM): KurrentConflict =>
  new KurrentConflict(undefined, { streamName: 'prefix-s', expected: 4n, current });

describe('KurrentDB revisions at the edge', () => {
  describe('streamStateOf', () => {
    it('given each expected revision of ours, when mapped, then the client state of the same meaning', () => {
      expect([streamStateOf('any'), streamStateOf('no_stream'), streamStateOf('stream_exists'), streamStateOf(0), streamStateOf(41)]).to.deep.equal([
        ANY,
        NO_STREAM,
        STREAM_EXISTS,
        0n,
        41n,
      ]);
    });

    it('given a negative or fractional revision, when mapped, then it is refused (no stream can be at it)', () => {
      expect(() => streamStateOf(-1)).to.throw(RangeError);
      expect(() => streamStateOf(1.5)).to.throw(RangeError);
      expect([isRevision(-1), isRevision(1.5), isRevision('any'), isRevision(0)]).to.deep.equal([false, false, false, true]);
    });
  });

  describe('revisionOf', () => {
    it('given a revision from the server, when mapped, then the same number', () => {
      expect(revisionOf(0n)).to.equal(0);
      expect(revisionOf(9_007_199_254_740_991n)).to.equal(Number.MAX_SAFE_INTEGER);
    });

    it('given a revision beyond a safe integer, when mapped, then it is refused rather than rounded', () => {
      expect(() => revisionOf(9_007_199_254_740_993n)).to.throw(RangeError, /beyond/);
    });
  });

  describe('conflictOf', () => {
    it('given the client conflict on a stream at revision 5, when mapped, then our conflict on our stream id with what we expected and actual 5', () => {
      const conflict = conflictOf(clientConflict(5n), 's', 4);
      expect(conflict).to.be.instanceOf(WrongExpectedVersionError);
      expect([conflict?.streamId, conflict?.expected, conflict?.actual]).to.deep.equal(['s', 4, 5]);
    });

    it('given the client conflict on a stream that does not exist, when mapped, then actual no_stream', () => {
      expect(conflictOf(clientConflict(NO_STREAM), 's', 'stream_exists')?.actual).to.equal('no_stream');
    });

    it('given any other error or a non-error, when mapped, then null (it is not a conflict)', () => {
      expect(conflictOf(new StreamNotFoundError(undefined, 's'), 's', 0)).to.equal(null);
      expect(conflictOf(new Error('wrong expected version'), 's', 0)).to.equal(null);
      expect(conflictOf('conflict', 's', 0)).to.equal(null);
    });
  });

  describe('revisionRange', () => {
    it('given an open range from 3, when mapped, then a read from 3 without a count', () => {
      expect(revisionRange({ from: 3, to: Number.MAX_SAFE_INTEGER })).to.deep.equal({ fromRevision: 3n });
    });

    it('given revisions 1 to 3 inclusive, when mapped, then 3 events from 1', () => {
      expect(revisionRange({ from: 1, to: 3 })).to.deep.equal({ fromRevision: 1n, maxCount: 3 });
    });

    it('given a range ending before it starts, when mapped, then null (nothing to read)', () => {
      expect(revisionRange({ from: 2, to: 1 })).to.equal(null);
    });

    it('given fractional bounds, when mapped, then whole revisions', () => {
      expect(revisionRange({ from: 1.5, to: 3.5 })).to.deep.equal({ fromRevision: 1n, maxCount: 3 });
    });
  });
});
