import type { EventStore, StreamAppend } from '../../shared/event-store/EventStore.ts';

/**
 * The same store, with `before` called ahead of each commit on the appends it holds (one for an
 * append, every stream's for an atomic one) and awaited before the commit goes on; appendAtomically
 * only where the store has it.
 */
export const interceptAppends = (store: EventStore, before: (appends: ReadonlyArray<StreamAppend>) => void | Promise<void>): EventStore => {
  const atomically = store.appendAtomically?.bind(store);
  return {
    append: async (streamId, events, expected) => {
      await before([{ streamId, events, expected }]);
      return store.append(streamId, events, expected);
    },
    ...(atomically
      ? {
          appendAtomically: async (appends) => {
            await before(appends);
            return atomically(appends);
          },
        }
      : {}),
    readStream: (...args) => store.readStream(...args),
    readAll: (...args) => store.readAll(...args),
    subscribeToAll: (...args) => store.subscribeToAll(...args),
    headPosition: () => store.headPosition(),
    close: () => store.close(),
  };
};
