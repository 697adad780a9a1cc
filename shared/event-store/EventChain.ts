import type { Position, ReadAllOptions } from './EventStore.ts';
import type { SignedCheckpoint } from './checkpointSignature.ts';
import type { RawEnvelope } from './verifyChain.ts';

/** An event's place in the hash chain, as served: both null for an event written before the chain. */
export interface ChainLinks {
  hash: string | null;
  prev_hash: string | null;
}

/**
 * The log's hash chain (hashChain.ts), for the stores that keep one (SQLite). Apart from the
 * EventStore port, which the features see through wrappers (timing, write positions): only the
 * events routes, `events verify` and the checkpoint signer read it.
 */
export interface EventChain {
  /** A page of the log as stored (neither upcast nor redacted), each event with its hash and prev_hash. */
  readChain(options: ReadAllOptions): Promise<RawEnvelope[]>;
  /** The hash and prev_hash of the events at these positions (positions without an event are left out). */
  linksAt(positions: ReadonlyArray<Position>): Promise<Map<Position, ChainLinks>>;
  /** Signed checkpoints after `after` (exclusive), in position order. */
  readCheckpoints(after: Position, limit: number): Promise<SignedCheckpoint[]>;
  /** The newest signed checkpoint, or null. */
  latestCheckpoint(): Promise<SignedCheckpoint | null>;
  /** Keeps a signed checkpoint; one already kept at its position stays as it is. */
  saveCheckpoint(checkpoint: SignedCheckpoint): Promise<void>;
}
