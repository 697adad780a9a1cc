import type { EventStore, RecordedEvent } from '../../shared/event-store/EventStore.ts';

/**
 * The store as a lagging reader sees it: writes and reads as they are, but every event its
 * subscriptions deliver first waits for `before(event)`. Read models built on it lag behind the log
 * exactly as long as a spec wants (a busy projector, deterministically).
 */
export const delayedDelivery = (store: EventStore, before: (event: RecordedEvent) => Promise<void> | void): EventStore => ({
  append: (...args) => store.append(...args),
  ...(store.appendAtomically ? { appendAtomically: (appends) => store.appendAtomically!(appends) } : {}),
  readStream: (...args) => store.readStream(...args),
  readAll: (...args) => store.readAll(...args),
  headPosition: () => store.headPosition(),
  close: () => store.close(),
  subscribeToAll: (options) =>
    store.subscribeToAll({
      ...options,
      onEvent: async (event) => {
        await before(event);
        await options.onEvent(event);
      },
    }),
});
