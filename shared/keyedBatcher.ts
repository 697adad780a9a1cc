/**
 * Work per key, one batch at a time: the items submitted while a key's batch runs go together as
 * its next batch, in arrival order (items submitted in one tick start together too). Used where one
 * process would otherwise race itself on a hot stream (a connection queue): in-process callers
 * share a commit instead of each waiting for the previous one's, and optimistic concurrency is left
 * to arbitrate between processes.
 *
 * `run` answers each item of a batch at its index, as fulfilled or rejected: one item's failure is
 * its own. When `run` itself throws, every item of the batch is rejected with that error.
 */
export const keyedBatcher = <Item, Result>(run: (key: string, items: Item[]) => Promise<Array<PromiseSettledResult<Result>>>) => {
  interface Waiting {
    item: Item;
    resolve(result: Result): void;
    reject(error: unknown): void;
  }
  const lanes = new Map<string, Waiting[]>();

  const pump = async (key: string, lane: Waiting[]): Promise<void> => {
    while (lane.length > 0) {
      const batch = lane.splice(0);
      try {
        const results = await run(key, batch.map((waiting) => waiting.item));
        for (const [index, waiting] of batch.entries()) {
          const result = results[index];
          if (result === undefined) waiting.reject(new Error(`keyedBatcher: no result for item ${index} of ${batch.length}`));
          else if (result.status === 'fulfilled') waiting.resolve(result.value);
          else waiting.reject(result.reason);
        }
      } catch (error) {
        for (const waiting of batch) waiting.reject(error);
      }
    }
    lanes.delete(key);
  };

  return (key: string, item: Item): Promise<Result> =>
    new Promise<Result>((resolve, reject) => {
      const lane = lanes.get(key);
      if (lane) {
        lane.push({ item, resolve, reject });
        return;
      }
      const started: Waiting[] = [{ item, resolve, reject }];
      lanes.set(key, started);
      // A microtask later: the submissions of this tick join the first batch.
      queueMicrotask(() => void pump(key, started));
    });
};
