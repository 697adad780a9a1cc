import { eventHash, followedHash, type ChainedFields } from './hashChain.ts';

/**
 * An event as stored, with its place in the chain: what `events verify` reads (GET
 * /api/v1/events/chain, `events export --raw`). `hash` is null for an event written before the
 * chain; `prev_hash` is what it follows (null there too).
 */
export interface RawEnvelope extends Omit<ChainedFields, 'position' | 'prev_hash'> {
  position: number;
  hash: string | null;
  prev_hash: string | null;
}

/** A signed checkpoint's claim, its signature already checked (checkpointSignature.ts). */
export interface ChainCheckpoint {
  position: number;
  hash: string;
}

export interface ChainFailure {
  position: number;
  reason: string;
}

/** The verifier's state: a fold over the log in position order (verifyNext), pure. */
export interface ChainVerification {
  /** The last event checked: what the next one must follow. */
  last: { position: bigint; hash: string | null } | null;
  /** Events without a hash, all before the first hashed one (written before the chain existed). */
  legacy: number;
  /** Events whose hash was recomputed and matched. */
  hashed: number;
  /** Checkpoints not reached yet, by position. */
  pending: ReadonlyMap<number, string>;
  /** Checkpoints whose hash was found at their position. */
  checkpointsMatched: number;
  /** The first event that does not follow; nothing after it is looked at. */
  failure: ChainFailure | null;
}

export const startVerification = (checkpoints: ReadonlyArray<ChainCheckpoint> = []): ChainVerification => ({
  last: null,
  legacy: 0,
  hashed: 0,
  pending: new Map(checkpoints.map(({ position, hash }) => [position, hash])),
  checkpointsMatched: 0,
  failure: null,
});

const failed = (state: ChainVerification, position: number, reason: string): ChainVerification => ({ ...state, failure: { position, reason } });

/** Checkpoints the log went past without holding an event at their position: the event was removed. */
const skippedCheckpoint = (state: ChainVerification, position: number): number | undefined => {
  for (const checkpoint of state.pending.keys()) if (checkpoint < position) return checkpoint;
  return undefined;
};

/** Checks one more event: it follows the one before, its hash is its content's, a checkpoint there matches. */
export const verifyNext = (state: ChainVerification, event: RawEnvelope): ChainVerification => {
  if (state.failure) return state;
  const { position } = event;
  if (!Number.isSafeInteger(position) || position < 1) return failed(state, position, 'position is not a positive integer');
  if (state.last !== null && BigInt(position) <= state.last.position) return failed(state, position, `position does not follow ${String(state.last.position)}`);
  const skipped = skippedCheckpoint(state, position);
  if (skipped !== undefined) return failed(state, skipped, 'a signed checkpoint names this position, and the log has no event there');
  if (event.hash === null) {
    if (state.hashed > 0) return failed(state, position, 'the event has no hash, and events before it have one');
    if (event.prev_hash !== null) return failed(state, position, 'the event has a prev_hash but no hash');
    if (state.pending.has(position)) return failed(state, position, 'a signed checkpoint names this event, and it has no hash');
    return { ...state, last: { position: BigInt(position), hash: null }, legacy: state.legacy + 1 };
  }
  const follows = followedHash(state.last);
  if (event.prev_hash !== follows) return failed(state, position, `prev_hash ${String(event.prev_hash)} does not follow the event before (${follows})`);
  const { stream, revision, type, version, data, metadata } = event;
  const hash = eventHash({ position: BigInt(position), stream, revision, type, version, data, metadata, prev_hash: follows });
  if (hash !== event.hash) return failed(state, position, `hash ${event.hash} is not the hash of the event's content (${hash})`);
  const signed = state.pending.get(position);
  if (signed !== undefined && signed !== hash) return failed(state, position, `the signed checkpoint at this position holds hash ${signed}`);
  const pending = signed === undefined ? state.pending : new Map([...state.pending].filter(([at]) => at !== position));
  return {
    ...state,
    last: { position: BigInt(position), hash },
    hashed: state.hashed + 1,
    pending,
    checkpointsMatched: state.checkpointsMatched + (signed === undefined ? 0 : 1),
  };
};

/** At the end of the log: a checkpoint beyond it means events were cut off the end. */
export const finishVerification = (state: ChainVerification): ChainVerification => {
  if (state.failure) return state;
  const beyond = [...state.pending.keys()].sort((a, b) => a - b)[0];
  if (beyond === undefined) return state;
  return failed(state, beyond, 'a signed checkpoint names this position, and the log ends before it (events were removed from its end)');
};
