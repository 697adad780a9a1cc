import type { KeyObject } from 'node:crypto';
import type { Clock } from '../../../shared/clock.ts';
import type { EventChain } from '../../../shared/event-store/EventChain.ts';
import type { EventStore, Subscription } from '../../../shared/event-store/EventStore.ts';
import { signCheckpoint } from '../../../shared/event-store/checkpointSignature.ts';

export interface CheckpointSignerOptions {
  /** The store's subscriptions tell the signer of new events. */
  store: Pick<EventStore, 'subscribeToAll'>;
  chain: EventChain;
  key: KeyObject;
  /** EVENTS_CHECKPOINT_EVERY: a checkpoint once the log has grown this many positions past the last one. */
  every: number;
  clock: Clock;
  onError(error: unknown): void;
}

/**
 * Signs the chain's head every `every` events (docs/events.md "Signed checkpoints"): follows the log
 * from the newest checkpoint and, at the first event `every` positions past it, signs that event's
 * hash. A checkpoint names a committed event, so a backup (which copies the log and its checkpoints
 * in one snapshot) never holds one beyond its log. Positions count events in the SQLite log (only a
 * hand-removed newest row leaves a gap), so "every N positions" is every N events.
 */
export const startCheckpointSigner = async (options: CheckpointSignerOptions): Promise<Subscription> => {
  const { chain, key, every, clock } = options;
  let last = BigInt((await chain.latestCheckpoint())?.position ?? 0);
  const due = (event: { position: bigint }): boolean => event.position - last >= BigInt(every);
  return options.store.subscribeToAll({
    after: last,
    // Only the events it may sign are decoded and handed over: the others are mere positions to it.
    accepts: due,
    onEvent: async (event) => {
      // Judged again: a page is judged when read, and a checkpoint signed since moves `last`.
      if (!due(event)) return;
      const hash = (await chain.linksAt([event.position])).get(event.position)?.hash;
      // An event written before the chain has nothing to sign: the next one will.
      if (hash === null || hash === undefined) return;
      await chain.saveCheckpoint(signCheckpoint({ position: Number(event.position), hash, signed_at: clock.now().toISOString() }, key));
      last = event.position;
    },
    onError: options.onError,
  });
};
