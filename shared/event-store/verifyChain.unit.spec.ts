import { expect } from 'chai';
import { chainAnchor, eventHash, followedHash } from './hashChain.ts';
import { finishVerification, startVerification, verifyNext, type ChainCheckpoint, type RawEnvelope } from './verifyChain.ts';

/** A log as the store writes it: `legacy` events without a hash first, then hashed ones, each following the one before. */
const log = (legacy: number, hashed: number, firstPosition = 1): RawEnvelope[] => {
  const events: RawEnvelope[] = [];
  let previous: { position: bigint; hash: string | null } | null = null;
  for (let index = 0; index < legacy + hashed; index += 1) {
    const position = firstPosition + index;
    const fields = { stream: `item-${index % 3}`, revision: Math.floor(index / 3), type: 'ItemUpdated', version: 1, data: { n: index }, metadata: { at: 't', version: 1 } };
    if (index < legacy) {
      events.push({ position, ...fields, hash: null, prev_hash: null });
      previous = { position: BigInt(position), hash: null };
      continue;
    }
    const prev_hash = followedHash(previous);
    const hash = eventHash({ position: BigInt(position), ...fields, prev_hash });
    events.push({ position, ...fields, hash, prev_hash });
    previous = { position: BigInt(position), hash };
  }
  return events;
};

/** given(events, checkpoints).thenFailsAt(position) | thenHolds(counts): the verifier's fold over a log. */
const given = (events: RawEnvelope[], checkpoints: ChainCheckpoint[] = []) => {
  const state = finishVerification(events.reduce(verifyNext, startVerification(checkpoints)));
  return {
    thenHolds: (counts: { legacy: number; hashed: number; checkpointsMatched?: number }) => {
      expect(state.failure).to.equal(null);
      expect({ legacy: state.legacy, hashed: state.hashed, checkpointsMatched: state.checkpointsMatched }).to.deep.equal({ checkpointsMatched: 0, ...counts });
    },
    thenFailsAt: (position: number, reason: RegExp) => {
      expect(state.failure?.position).to.equal(position);
      expect(state.failure?.reason).to.match(reason);
    },
  };
};

describe('verifyChain: does each event follow the one before?', () => {
  it('given a log written with the chain from its start, when verified, then every event holds', () => {
    given(log(0, 10)).thenHolds({ legacy: 0, hashed: 10 });
  });

  it('given a log whose first events were written before the chain, when verified, then they are counted apart and the chain holds from the anchor of the last of them', () => {
    const events = log(4, 6);
    expect(events[4]?.prev_hash).to.equal(chainAnchor(4));
    given(events).thenHolds({ legacy: 4, hashed: 6 });
  });

  it('given an event whose data was changed, when verified, then it fails at that event, its hash not being its content\'s', () => {
    const events = log(0, 10);
    events[5] = { ...(events[5] as RawEnvelope), data: { n: 'changed' } };
    given(events).thenFailsAt(6, /not the hash of the event's content/);
  });

  it('given an event changed and rehashed by hand, when verified, then it fails at the event after it, which follows the old hash', () => {
    const events = log(0, 10);
    const changed = { ...(events[5] as RawEnvelope), data: { n: 'changed' } };
    changed.hash = eventHash({ ...changed, position: BigInt(changed.position), prev_hash: changed.prev_hash as string });
    events[5] = changed;
    given(events).thenFailsAt(7, /does not follow the event before/);
  });

  it('given an event removed from the middle, when verified, then it fails at the event after the gap', () => {
    const events = log(0, 10);
    events.splice(3, 1);
    given(events).thenFailsAt(5, /does not follow/);
  });

  it('given the last legacy event removed, when verified, then the first hashed event no longer follows the anchor', () => {
    const events = log(3, 3);
    events.splice(2, 1);
    given(events).thenFailsAt(4, /does not follow/);
  });

  it('given a hash removed after the chain began, when verified, then it fails there: hashless events come only first', () => {
    const events = log(0, 5);
    events[3] = { ...(events[3] as RawEnvelope), hash: null, prev_hash: null };
    given(events).thenFailsAt(4, /has no hash/);
  });

  it('given an event repeated, when verified, then it fails at the repeat, whose position does not move on', () => {
    const events = log(0, 4);
    given([events[0], events[1], events[1], events[2]] as RawEnvelope[]).thenFailsAt(2, /does not follow 2/);
  });

  it('given signed checkpoints that match, when verified, then they are counted', () => {
    const events = log(2, 8);
    given(events, [{ position: 5, hash: events[4]?.hash as string }, { position: 10, hash: events[9]?.hash as string }]).thenHolds({ legacy: 2, hashed: 8, checkpointsMatched: 2 });
  });

  it('given a log cut after a checkpoint, when verified, then it fails at the checkpoint, the end being gone', () => {
    const events = log(0, 10);
    given(events.slice(0, 7), [{ position: 9, hash: events[8]?.hash as string }]).thenFailsAt(9, /log ends before it/);
  });

  it('given a whole log rewritten (every hash recomputed) under a checkpoint, when verified, then the checkpoint names the rewritten event', () => {
    const signed = log(0, 6);
    const rewritten = log(0, 6, 1).map((event) => ({ ...event }));
    // A forger recomputes the whole chain after changing event 2: every link holds, the signature does not.
    const forged: RawEnvelope[] = [];
    let previous: { position: bigint; hash: string | null } | null = null;
    for (const event of rewritten) {
      const data = event.position === 2 ? { n: 'forged' } : event.data;
      const prev_hash = followedHash(previous);
      const hash = eventHash({ ...event, data, position: BigInt(event.position), prev_hash });
      forged.push({ ...event, data, prev_hash, hash });
      previous = { position: BigInt(event.position), hash };
    }
    given(forged, [{ position: 4, hash: signed[3]?.hash as string }]).thenFailsAt(4, /signed checkpoint at this position holds hash/);
  });

  it('given a checkpoint at a removed event, when verified, then it fails at the checkpoint\'s position', () => {
    const events = log(0, 6);
    const checkpoint = { position: 3, hash: events[2]?.hash as string };
    events.splice(2, 1);
    given(events, [checkpoint]).thenFailsAt(3, /has no event there/);
  });
});
