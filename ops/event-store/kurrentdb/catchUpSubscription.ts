import type { Position, RecordedEvent, SubscribeOptions, Subscription } from '../../../shared/event-store/EventStore.ts';
import { backoffDelay, type BackoffSettings } from '../../bus/backoffDelay.ts';
import { HandlerFailure, subscriptionRun, type Delivery } from '../subscriptionRun.ts';

/** One server-side catch-up subscription: events strictly after a position, then live ones. */
export interface ServerSubscription extends AsyncIterable<RecordedEvent | null> {
  /** Ends it; the iteration then stops. Idempotent. */
  close(): Promise<void>;
}

/** What the loop asks of the store. */
export interface CatchUpSource {
  /** The newest event's position now: onCaughtUp fires once delivery reaches it. */
  head(): Promise<Position>;
  /** A server subscription after `after`; null items are results that are not ours (skipped). */
  open(after: Position): ServerSubscription;
  /** Whether an error of a server subscription is the connection's or the server's, worth subscribing again for. */
  retryable(error: unknown): boolean;
}

export interface ResubscribeSettings extends BackoffSettings {
  /** Failed subscriptions in a row before the error goes to onError. */
  attempts: number;
}

/**
 * About a minute of waits (0.1, 0.2, 0.4 ... then 5 s each): a node restart or a leader election,
 * not a database that is gone. A subscription that lived longer than `maxMs` before it failed
 * starts the count again.
 */
export const DEFAULT_RESUBSCRIBE: ResubscribeSettings = { attempts: 16, baseMs: 100, maxMs: 5_000 };

/** A subscription the server ended without an error: resubscribed like a dropped one. */
export class SubscriptionEnded extends Error {
  constructor() {
    super('KurrentDB ended the subscription');
    this.name = 'SubscriptionEnded';
  }
}

/**
 * The EventStore port's subscribeToAll over the server's catch-up subscriptions. The server does
 * the catch-up and the hand-over to live events; subscriptionRun keeps the port's promises (one
 * event at a time, onCaughtUp once at the head read when subscribing rather than at the server's
 * own signal, which arrives ahead of the events still buffered and counts system events; a
 * handler's throw stops it; close waits for the handler in flight). This loop adds:
 * - a dropped subscription (connection lost, node restarted, slow subscriber dropped by the server)
 *   is opened again after the last delivered position, so nothing is missed or repeated; only
 *   after `attempts` failures in a row does the error reach onError;
 * - an error that is not the server's (an event that cannot be decoded) stops it at once.
 *
 * Do not await `close()` from inside `onEvent`: close waits for the in-flight handler.
 */
export function catchUpSubscription(source: CatchUpSource, options: SubscribeOptions, retry: ResubscribeSettings = DEFAULT_RESUBSCRIBE): Subscription {
  let current: ServerSubscription | null = null;
  let wake = (): void => {};

  /** The wait before subscribing again; close() cuts it short. */
  const pause = (ms: number): Promise<void> =>
    new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        wake = () => {};
        resolve();
      };
      const timer = setTimeout(done, ms);
      wake = done;
    });

  const follow = async (delivery: Delivery): Promise<void> => {
    let failures = 0;
    while (!delivery.closed) {
      const openedAt = performance.now();
      const server = source.open(delivery.last);
      current = server;
      let failure: unknown = null;
      try {
        for await (const event of server) {
          if (delivery.closed) break;
          failures = 0;
          // Not ours, or (defensively) not after what was delivered: a repeat is worse than a skip here.
          if (event === null || event.position <= delivery.last) continue;
          await delivery.deliver(event);
        }
        if (!delivery.closed) failure = new SubscriptionEnded();
      } catch (error) {
        if (error instanceof HandlerFailure) throw error;
        failure = error;
      } finally {
        await server.close();
      }
      if (delivery.closed) return;
      if (!(failure instanceof SubscriptionEnded) && !source.retryable(failure)) throw failure;
      failures = performance.now() - openedAt > retry.maxMs ? 1 : failures + 1;
      if (failures > retry.attempts) throw failure;
      await pause(backoffDelay(retry, failures));
    }
  };

  return subscriptionRun(options, () => source.head(), follow, async () => {
    wake();
    // Ends a wait for the server's next event; a handler in flight is waited for by the run.
    await current?.close();
  });
}
