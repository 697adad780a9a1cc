import { expect } from 'chai';
import { InProcessBus } from '../bus/InProcessBus.ts';
import { sleep, waitUntil } from '../../test/support/waitUntil.ts';
import { RelayedHeartbeats } from './RelayedHeartbeats.ts';

const TASK = '65b000000000000000000001';
const at = (seconds: number) => new Date(Date.UTC(2026, 10, 25, 12, 0, seconds));

describe('RelayedHeartbeats: task beats across processes on the bus', () => {
  let bus: InProcessBus;
  let relays: RelayedHeartbeats[];

  beforeEach(() => {
    bus = new InProcessBus();
    relays = [];
  });

  afterEach(async () => {
    await Promise.all(relays.map((relay) => relay.close()));
    await bus.close();
  });

  const relay = async (id: string, publishEveryMs = 1000) => {
    const created = new RelayedHeartbeats({ bus, publishEveryMs });
    await created.start(id);
    relays.push(created);
    return created;
  };

  it('given a worker and a scheduler process, when the worker beats, then the scheduler sees the beat', async () => {
    const worker = await relay('worker');
    const scheduler = await relay('scheduler');
    worker.beat(TASK, at(1));
    expect(worker.last(TASK)?.toISOString()).to.equal(at(1).toISOString());
    await waitUntil(() => scheduler.last(TASK) !== null, 'scheduler.last(TASK) !== null');
    expect(scheduler.last(TASK)?.toISOString()).to.equal(at(1).toISOString());
  });

  it('given beats closer than the relay period, when sent, then only the first crosses; a later one crosses again', async () => {
    const worker = await relay('worker', 1000);
    const scheduler = await relay('scheduler', 1000);
    worker.beat(TASK, at(1));
    await waitUntil(() => scheduler.last(TASK) !== null, 'scheduler.last(TASK) !== null');
    worker.beat(TASK, new Date(at(1).getTime() + 500));
    await sleep(100);
    expect(scheduler.last(TASK)?.toISOString(), 'a beat within the period stays local').to.equal(at(1).toISOString());
    expect(worker.last(TASK)?.getTime()).to.equal(at(1).getTime() + 500);
    worker.beat(TASK, at(3));
    await waitUntil(() => scheduler.last(TASK)?.getTime() === at(3).getTime(), 'scheduler.last(TASK)?.getTime() === at(3).getTime()');
  });

  it('given an older beat arriving after a newer one, when relayed, then the newest stays', async () => {
    const first = await relay('first', 0);
    const second = await relay('second', 0);
    const reader = await relay('reader', 0);
    first.beat(TASK, at(5));
    await waitUntil(() => reader.last(TASK) !== null, 'reader.last(TASK) !== null');
    second.beat(TASK, at(2));
    await waitUntil(() => second.last(TASK) !== null, 'second.last(TASK) !== null');
    await sleep(100);
    expect(reader.last(TASK)?.toISOString()).to.equal(at(5).toISOString());
  });

  it('given a run that ended, when its worker forgets the task, then the other processes forget it too', async () => {
    const worker = await relay('worker');
    const scheduler = await relay('scheduler');
    worker.beat(TASK, at(1));
    await waitUntil(() => scheduler.last(TASK) !== null, 'scheduler.last(TASK) !== null');
    worker.forget(TASK);
    await waitUntil(() => scheduler.last(TASK) === null, 'scheduler.last(TASK) === null');
  });

  it('given beats sent before a process joined, when it joins, then it does not replay them', async () => {
    const worker = await relay('worker');
    worker.beat(TASK, at(1));
    const late = await relay('late');
    worker.beat('65b000000000000000000002', at(2));
    await waitUntil(() => late.last('65b000000000000000000002') !== null, 'late.last(65b000000000000000000002) !== null');
    expect(late.last(TASK)).to.equal(null);
  });
});
