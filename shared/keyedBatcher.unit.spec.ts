import { expect } from 'chai';
import { keyedBatcher } from './keyedBatcher.ts';

/** A run that records its batches and answers when the test releases it. */
const recordingRun = () => {
  const batches: Array<{ key: string; items: number[] }> = [];
  const releases: Array<() => void> = [];
  const run = async (key: string, items: number[]): Promise<Array<PromiseSettledResult<number>>> => {
    batches.push({ key, items });
    await new Promise<void>((resolve) => releases.push(resolve));
    return items.map((item) => (item < 0 ? { status: 'rejected', reason: new Error(`bad ${item}`) } : { status: 'fulfilled', value: item * 10 }));
  };
  return { batches, releases, run };
};
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('keyedBatcher', () => {
  it('given items submitted in one tick, when run, then they go as one batch and each gets its own result', async () => {
    const { batches, releases, run } = recordingRun();
    const submit = keyedBatcher(run);
    const results = Promise.all([submit('k', 1), submit('k', 2), submit('k', 3)]);
    await tick();
    releases.shift()?.();
    expect(await results).to.deep.equal([10, 20, 30]);
    expect(batches).to.deep.equal([{ key: 'k', items: [1, 2, 3] }]);
  });

  it('given a batch running, when more items arrive, then they wait and go together as the next batch, in arrival order', async () => {
    const { batches, releases, run } = recordingRun();
    const submit = keyedBatcher(run);
    const first = submit('k', 1);
    await tick();
    const later = [submit('k', 2), submit('k', 3)];
    await tick();
    expect(batches, 'nothing starts while the first batch runs').to.have.length(1);
    releases.shift()?.();
    expect(await first).to.equal(10);
    await tick();
    expect(batches.map((batch) => batch.items)).to.deep.equal([[1], [2, 3]]);
    releases.shift()?.();
    expect(await Promise.all(later)).to.deep.equal([20, 30]);
  });

  it('given two keys, when items of both are submitted, then their batches run side by side', async () => {
    const { batches, releases, run } = recordingRun();
    const submit = keyedBatcher(run);
    const both = Promise.all([submit('a', 1), submit('b', 2)]);
    await tick();
    expect(batches.map((batch) => batch.key)).to.deep.equal(['a', 'b']);
    releases.splice(0).forEach((release) => release());
    expect(await both).to.deep.equal([10, 20]);
  });

  it('given one item of a batch rejected, when answered, then only that caller fails', async () => {
    const { releases, run } = recordingRun();
    const submit = keyedBatcher(run);
    const results = Promise.allSettled([submit('k', 1), submit('k', -1), submit('k', 2)]);
    await tick();
    releases.shift()?.();
    expect((await results).map((result) => result.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
  });

  it('given a run that throws, when answered, then every caller of the batch fails with its error and the key serves the next batch', async () => {
    let calls = 0;
    const submit = keyedBatcher<number, number>(async (_key, items) => {
      calls += 1;
      if (calls === 1) throw new Error('disk');
      return items.map((item) => ({ status: 'fulfilled', value: item }));
    });
    const failed = await Promise.allSettled([submit('k', 1), submit('k', 2)]);
    expect(failed.map((result) => (result.status === 'rejected' ? String(result.reason) : 'ok'))).to.deep.equal(['Error: disk', 'Error: disk']);
    expect(await submit('k', 3)).to.equal(3);
  });
});
