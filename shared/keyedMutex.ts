/**
 * Runs async work one at a time per key, in arrival order. Used where one process would otherwise
 * race itself on a hot stream (a connection queue): in-process callers queue up instead of
 * conflicting, and optimistic concurrency is left to arbitrate between processes.
 */
export const keyedMutex = () => {
  const tails = new Map<string, Promise<unknown>>();
  return async <T>(key: string, work: () => Promise<T>): Promise<T> => {
    const previous = tails.get(key) ?? Promise.resolve();
    const run = previous.then(work, work);
    const tail = run.catch(() => undefined);
    tails.set(key, tail);
    try {
      return await run;
    } finally {
      if (tails.get(key) === tail) tails.delete(key);
    }
  };
};
