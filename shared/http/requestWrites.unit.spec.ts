import { expect } from 'chai';
import { requestWrites } from './requestWrites.ts';
import type { ReadModelProgress } from '../read-store/ReadModelProgress.ts';

/**
 * A read model whose waiters are released together when `apply` is called, as the projection
 * runner releases them; `released` runs first, as the work a commit releases (the in-process
 * worker's pick-up) does.
 */
const readModel = (released: () => void): ReadModelProgress & { apply(): void } => {
  const waiters: Array<() => void> = [];
  return {
    waitFor: () => new Promise<boolean>((resolve) => waiters.push(() => resolve(true))),
    apply: () => {
      released();
      for (const wake of waiters.splice(0)) wake();
    },
  };
};

/** A chain of `hops` awaits, as a worker's path from its message to its run's start, then `done`. */
const chain = async (hops: number, done: () => void): Promise<void> => {
  for (let hop = 0; hop < hops; hop += 1) await Promise.resolve();
  done();
};

describe('requestWrites: settle and settleRuns', () => {
  const clock = { now: () => new Date('2026-11-29T10:00:00Z') };

  it('given work of 50 awaits released by the same apply, when settleRuns resolves, then the work is done; settle alone resolves before it', async () => {
    let workDone = false;
    const order: string[] = [];
    const model = readModel(() => void chain(50, () => (workDone = true)));
    const writes = requestWrites({ clock, readModels: model, readYourWritesTimeoutMs: 1000 });
    const settled = writes.settle(1n).then(() => order.push(`settle: work done ${workDone}`));
    const settledRuns = writes.settleRuns(1n).then(() => order.push(`settleRuns: work done ${workDone}`));
    model.apply();
    await Promise.all([settled, settledRuns]);
    expect(order).to.deep.equal(['settle: work done false', 'settleRuns: work done true']);
  });

  it('given a command that wrote nothing, when settleRuns is called, then it resolves without waiting for the read model', async () => {
    const writes = requestWrites({ clock, readModels: { waitFor: () => new Promise<boolean>(() => undefined) }, readYourWritesTimeoutMs: 1000 });
    await writes.settleRuns(null);
  });
});
