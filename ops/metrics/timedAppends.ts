import type { EventStore } from '../../shared/event-store/EventStore.ts';

/**
 * The event store with every append timed (one commit: append, or appendAtomically where the store
 * has multi-stream transactions), failed ones included: a slow conflict is a slow commit too.
 * Reads pass through untouched.
 */
export const timedAppends = (store: EventStore, observe: (seconds: number) => void): EventStore => {
  const atomic = store.appendAtomically?.bind(store);
  const timed = async <T>(commit: () => Promise<T>): Promise<T> => {
    const started = process.hrtime.bigint();
    try {
      return await commit();
    } finally {
      observe(Number(process.hrtime.bigint() - started) / 1e9);
    }
  };
  return {
    append: (streamId, events, expected) => timed(() => store.append(streamId, events, expected)),
    ...(atomic === undefined ? {} : { appendAtomically: (appends) => timed(() => atomic(appends)) }),
    readStream: (streamId, options) => store.readStream(streamId, options),
    readAll: (options) => store.readAll(options),
    subscribeToAll: (options) => store.subscribeToAll(options),
    headPosition: () => store.headPosition(),
    close: () => store.close(),
  };
};
