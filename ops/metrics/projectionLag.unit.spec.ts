import { expect } from 'chai';
import type { Position, RecordedEvent } from '../../shared/event-store/EventStore.ts';
import { LAG_COUNT_LIMIT, projectionLag } from './projectionLag.ts';

/** A log whose events sit at the given positions (KurrentDB's are sparse). */
const logAt = (positions: bigint[]) => ({
  reads: 0,
  headPosition: async (): Promise<Position> => positions.at(-1) ?? 0n,
  async readAll(options: { after?: Position; maxCount?: number } = {}): Promise<RecordedEvent[]> {
    this.reads += 1;
    const after = options.after ?? 0n;
    return positions
      .filter((position) => position > after)
      .slice(0, options.maxCount ?? Infinity)
      .map((position) => ({ position }) as RecordedEvent);
  },
});

describe('projectionLag', () => {
  it('given a store whose positions number the events, when the read models are behind, then the lag is the head minus the applied position, without a read', async () => {
    const log = logAt([1n, 2n, 3n, 4n, 5n]);
    expect(await projectionLag({ eventStore: log, applied: async () => 2n, positionsCountEvents: true })()).to.equal(3);
    expect(log.reads).to.equal(0);
  });

  it('given a store with sparse positions (KurrentDB), when behind, then the events after the applied position are counted, at most LAG_COUNT_LIMIT', async () => {
    const log = logAt([100n, 250n, 900n, 1400n]);
    expect(await projectionLag({ eventStore: log, applied: async () => 250n, positionsCountEvents: false })()).to.equal(2);
    const long = logAt(Array.from({ length: LAG_COUNT_LIMIT + 5 }, (_, index) => BigInt(index * 7 + 7)));
    expect(await projectionLag({ eventStore: long, applied: async () => 0n, positionsCountEvents: false })()).to.equal(LAG_COUNT_LIMIT);
  });

  it('given read models at or past the head (a checkpoint read after a newer head), when measured, then the lag is 0 and the log is not read', async () => {
    for (const positionsCountEvents of [true, false]) {
      const log = logAt([10n, 20n]);
      expect(await projectionLag({ eventStore: log, applied: async () => 20n, positionsCountEvents })()).to.equal(0);
      expect(await projectionLag({ eventStore: log, applied: async () => 25n, positionsCountEvents })()).to.equal(0);
      expect(log.reads).to.equal(0);
    }
  });
});
