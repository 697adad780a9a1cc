import type { EventStore } from '../../shared/event-store/EventStore.ts';

/** The same store seen without appendAtomically: the path of a store with no multi-stream transactions (EventStoreDB). */
export const withoutAtomicAppends = (store: EventStore): EventStore => ({
  append: (...args) => store.append(...args),
  readStream: (...args) => store.readStream(...args),
  readAll: (...args) => store.readAll(...args),
  subscribeToAll: (...args) => store.subscribeToAll(...args),
  headPosition: () => store.headPosition(),
  close: () => store.close(),
});
