import { expect } from 'chai';
import type { KafkaMessage } from 'kafkajs';
import { waitUntil } from '../../../test/support/waitUntil.ts';
import { PartitionLanes } from './PartitionLanes.ts';

const record = (offset: number): KafkaMessage => ({
  key: Buffer.from('k'),
  value: Buffer.from(String(offset)),
  timestamp: '0',
  attributes: 0,
  offset: String(offset),
  headers: {},
});

/** Lanes whose handler waits until the test releases each record; commits and pauses are recorded. */
const bed = (concurrency = 4) => {
  const running = new Map<string, () => void>();
  const failing = new Set<string>();
  const started: string[] = [];
  const commits: Array<Array<{ partition: number; offset: string }>> = [];
  const paused: number[] = [];
  const resumed: number[] = [];
  const lanes = new PartitionLanes({
    concurrency,
    retryDelayMs: 5,
    handle: (partition, message) =>
      new Promise<void>((resolve, reject) => {
        const name = `${partition}/${message.offset}`;
        started.push(name);
        running.set(name, () => (failing.delete(name) ? reject(new Error('dead letter not written')) : resolve()));
      }),
    commit: async (offsets) => void commits.push([...offsets]),
    pause: (partition) => void paused.push(partition),
    resume: (partition) => void resumed.push(partition),
    log: () => undefined,
  });
  const finish = (name: string) => {
    const done = running.get(name);
    if (!done) throw new Error(`${name} is not running (running: ${[...running.keys()].join(', ')})`);
    running.delete(name);
    done();
  };
  return { lanes, started, running, failing, commits, paused, resumed, finish };
};

describe('PartitionLanes', () => {
  it('given records of two partitions, when one partition is busy, then the other runs meanwhile and each runs one record at a time in offset order', async () => {
    const { lanes, started, finish } = bed();
    lanes.assign([0, 1]);
    lanes.push(0, record(0));
    lanes.push(0, record(1));
    lanes.push(1, record(0));
    await waitUntil(() => started.length === 2, 'both partitions start');
    expect(started).to.deep.equal(['0/0', '1/0']);
    finish('1/0');
    finish('0/0');
    await waitUntil(() => started.length === 3, 'the second record of partition 0 starts');
    expect(started.at(-1)).to.equal('0/1');
  });

  it('given a concurrency of 2, when three partitions have records, then the third waits for a free slot', async () => {
    const { lanes, started, finish } = bed(2);
    lanes.assign([0, 1, 2]);
    for (const partition of [0, 1, 2]) lanes.push(partition, record(0));
    await waitUntil(() => started.length === 2, 'two start');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(started).to.have.length(2);
    finish('0/0');
    await waitUntil(() => started.length === 3, 'the third starts once a slot is free');
  });

  it('given handled records, when they settle, then the offset after the last one is committed for its partition', async () => {
    const { lanes, commits, finish, started } = bed();
    lanes.assign([3]);
    lanes.push(3, record(7));
    lanes.push(3, record(8));
    await waitUntil(() => started.length === 1, 'the first starts');
    finish('3/7');
    await waitUntil(() => started.length === 2, 'the second starts');
    finish('3/8');
    await waitUntil(() => commits.flat().some(({ offset }) => offset === '9'), 'offset 9 is committed');
    // Commits gather for a moment: 8 may have been committed on its own before, nothing beyond 9.
    expect(commits.flat().every(({ partition, offset }) => partition === 3 && ['8', '9'].includes(offset))).to.equal(true);
  });

  it('given a rebalance while a record runs, when kafkajs fetches the partition again from its committed offset, then queued records come once and the running one is not started twice', async () => {
    const { lanes, started, finish, commits } = bed();
    lanes.assign([0]);
    for (const offset of [0, 1, 2]) lanes.push(0, record(offset));
    await waitUntil(() => started.length === 1, 'offset 0 runs');
    lanes.assign([0]);
    // Refetched from the committed offset (nothing committed yet: 0).
    for (const offset of [0, 1, 2]) lanes.push(0, record(offset));
    finish('0/0');
    await waitUntil(() => started.length === 2, 'offset 1 runs');
    finish('0/1');
    await waitUntil(() => started.length === 3, 'offset 2 runs');
    finish('0/2');
    await waitUntil(() => commits.flat().some(({ offset }) => offset === '3'), 'offset 3 is committed');
    expect(started).to.deep.equal(['0/0', '0/1', '0/2']);
  });

  it('given a partition taken away while its record runs, when the record settles, then its offset is not committed', async () => {
    const { lanes, started, finish, commits } = bed();
    lanes.assign([0, 1]);
    lanes.push(0, record(5));
    await waitUntil(() => started.length === 1, 'the record runs');
    lanes.assign([1]);
    finish('0/5');
    await lanes.close();
    expect(commits.flat()).to.deep.equal([]);
  });

  it('given a partition with many records queued, when its lane is full, then fetching it pauses and resumes once the lane has drained', async () => {
    const { lanes, paused, resumed, started, finish } = bed();
    lanes.assign([0]);
    // The first starts at once; 256 more fill the lane.
    for (let offset = 0; offset <= 256; offset += 1) lanes.push(0, record(offset));
    expect(paused).to.deep.equal([0]);
    for (let offset = 0; offset < 130; offset += 1) {
      await waitUntil(() => started.length === offset + 1, `offset ${offset} runs`);
      finish(`0/${offset}`);
    }
    await waitUntil(() => resumed.length === 1, 'the partition resumes');
    expect(resumed).to.deep.equal([0]);
  });

  it('given a record whose handling fails (not its handler), when it settles, then it is tried again before the next record of its partition', async () => {
    const { lanes, started, failing, finish } = bed();
    lanes.assign([0]);
    failing.add('0/0');
    lanes.push(0, record(0));
    lanes.push(0, record(1));
    await waitUntil(() => started.length === 1, 'the record runs');
    finish('0/0');
    await waitUntil(() => started.length === 2, 'it runs again');
    expect(started).to.deep.equal(['0/0', '0/0']);
  });

  it('given a record running, when the lanes close, then close waits for it, starts nothing more and commits it', async () => {
    const { lanes, started, finish, commits } = bed();
    lanes.assign([0]);
    lanes.push(0, record(0));
    lanes.push(0, record(1));
    await waitUntil(() => started.length === 1, 'the record runs');
    let closed = false;
    const closing = lanes.close().then(() => (closed = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(closed, 'closed before the record settled').to.equal(false);
    finish('0/0');
    await closing;
    expect(started).to.deep.equal(['0/0']);
    expect(commits.flat().at(-1)).to.deep.equal({ partition: 0, offset: '1' });
  });
});
