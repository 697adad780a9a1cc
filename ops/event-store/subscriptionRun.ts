import type { Position, RecordedEvent, SubscribeOptions, Subscription } from '../../shared/event-store/EventStore.ts';

/** What a handler threw, as it crosses a loop: never retried, it goes to onError as it is. */
export class HandlerFailure {
  constructor(readonly error: unknown) {}
}

/** A subscription's delivery state, as its loop sees it. */
export interface Delivery {
  /** Position of the last event delivered (the subscription's `after` before any). */
  readonly last: Position;
  /** close() was called, or the run stopped on an error. */
  readonly closed: boolean;
  /** Hands an event to the handler and returns once its promise settles; a throw comes out as a HandlerFailure. */
  deliver(event: RecordedEvent): Promise<void>;
  /** Tells onCaughtUp (once) that delivery has reached the head. */
  reachedHead(): void;
  /** Moves past events up to `position` that the subscription does not accept (never back). */
  passed(position: Position): void;
}

/**
 * The promises of subscribeToAll that do not depend on how events are fetched, for every
 * adapter's loop (pullSubscription.ts, kurrentdb/catchUpSubscription.ts):
 * - one event at a time: the loop awaits `deliver`, which awaits the handler;
 * - an event `accepts` refuses is passed over (the position moves on, the handler is not called);
 * - onCaughtUp once, at the head read when subscribing: under steady appends an empty page may
 *   never come, yet the caller still needs to learn when history has been replayed;
 * - an error stops the subscription and goes to onError (a handler's as it threw it);
 * - close() stops the loop (`stop` ends whatever it waits on) and waits for the handler in flight.
 *
 * Do not await `close()` from inside `onEvent`: close waits for the in-flight handler.
 */
export function subscriptionRun(
  options: SubscribeOptions,
  head: () => Promise<Position>,
  loop: (delivery: Delivery) => Promise<void>,
  stop: () => void | Promise<void>,
): Subscription {
  let closed = false;
  let last = options.after;
  let caughtUp = false;
  let headPosition = options.after;
  const reachedHead = (): void => {
    if (caughtUp) return;
    caughtUp = true;
    options.onCaughtUp?.(last);
  };
  const delivery: Delivery = {
    get last() {
      return last;
    },
    get closed() {
      return closed;
    },
    deliver: async (event) => {
      if (options.accepts && !options.accepts(event)) return delivery.passed(event.position);
      try {
        await options.onEvent(event);
      } catch (error) {
        throw new HandlerFailure(error);
      }
      last = event.position;
      if (last >= headPosition) reachedHead();
    },
    reachedHead,
    passed: (position) => {
      if (position <= last) return;
      last = position;
      if (last >= headPosition) reachedHead();
    },
  };

  const run = async (): Promise<void> => {
    try {
      headPosition = await head();
      if (last >= headPosition) reachedHead();
      await loop(delivery);
    } catch (failure) {
      // Stopping is the only safe reaction: skipping the event would leave a read model wrong.
      closed = true;
      const error = failure instanceof HandlerFailure ? failure.error : failure;
      if (!options.onError) throw error;
      options.onError(error);
    }
  };

  const running = run();
  return {
    close: async () => {
      closed = true;
      await stop();
      // A failure without onError has already surfaced as an unhandled rejection; closing
      // a stopped subscription must still succeed.
      await running.catch(() => {});
    },
  };
}
