import { expect } from 'chai';
import { SlotsClosedError, WorkerSlots, type Slot, type SlotPolicy } from './WorkerSlots.ts';

/** A bed that records the order runs get their slot in and holds their slots until released. */
const bed = (slots: number, policy: SlotPolicy = 'fair') => {
  const pool = new WorkerSlots({ slots, policy });
  const started: string[] = [];
  const held = new Map<string, Slot>();
  const request = (run: string, project: string) =>
    void pool.acquire(run, project).then((slot) => {
      started.push(run);
      held.set(run, slot);
    });
  const finish = async (run: string) => {
    held.get(run)?.release();
    held.delete(run);
    await settle();
  };
  return { pool, started, request, finish };
};

/** Grants resolve in microtasks: let them run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('worker slots (fair share between projects)', () => {
  it('given two slots taken by a project backlog, when another project asks, then the next freed slot is its (one turnover)', async () => {
    const { started, request, finish } = bed(2);
    for (let index = 1; index <= 10; index += 1) request(`a${index}`, 'A');
    await settle();
    expect(started).to.deep.equal(['a1', 'a2']);
    request('b1', 'B');
    await finish('a1');
    expect(started).to.deep.equal(['a1', 'a2', 'b1']);
    await finish('a2');
    expect(started.at(-1)).to.equal('a3');
  });

  it('given the fifo baseline, when another project asks behind a backlog, then it waits for the whole backlog', async () => {
    const { started, request, finish } = bed(2, 'fifo');
    for (let index = 1; index <= 4; index += 1) request(`a${index}`, 'A');
    request('b1', 'B');
    await settle();
    for (const run of ['a1', 'a2', 'a3', 'a4']) await finish(run);
    expect(started).to.deep.equal(['a1', 'a2', 'a3', 'a4', 'b1']);
  });

  it('given three projects with backlogs on one slot, when slots free, then they take turns slot by slot', async () => {
    const { started, request, finish } = bed(1);
    for (const project of ['A', 'B', 'C']) for (let index = 1; index <= 2; index += 1) request(`${project}${index}`, project);
    await settle();
    for (let turn = 0; turn < 6; turn += 1) await finish(started.at(-1) as string);
    expect(started).to.deep.equal(['A1', 'B1', 'C1', 'A2', 'B2', 'C2']);
  });

  it('given waiting runs, when their waits are asked, then each says how many runs start before it under either policy', async () => {
    const fair = bed(1);
    for (const run of ['a1', 'a2', 'a3', 'a4']) fair.request(run, 'A');
    fair.request('b1', 'B');
    fair.request('b2', 'B');
    await settle();
    // a1 runs; B has not been served since idle, so the turns go b1, a2, b2, a3, a4.
    const ahead = (pool: WorkerSlots, run: string) => pool.waitOf(run)?.ahead;
    expect(fair.pool.waitOf('a1')).to.equal(null);
    expect(['b1', 'a2', 'b2', 'a3', 'a4'].map((run) => ahead(fair.pool, run))).to.deep.equal([0, 1, 2, 3, 4]);
    expect(fair.pool.waitOf('a2')).to.include({ slots: 1, running: 1, policy: 'fair' });
    for (let turn = 0; turn < 5; turn += 1) await fair.finish(fair.started.at(-1) as string);
    expect(fair.started).to.deep.equal(['a1', 'b1', 'a2', 'b2', 'a3', 'a4']);

    const fifo = bed(1, 'fifo');
    for (const run of ['a1', 'a2', 'a3']) fifo.request(run, 'A');
    fifo.request('b1', 'B');
    await settle();
    expect(['a2', 'a3', 'b1'].map((run) => ahead(fifo.pool, run))).to.deep.equal([0, 1, 2]);
  });

  it('given a slot released twice, when runs wait, then only one of them starts', async () => {
    const pool = new WorkerSlots({ slots: 1 });
    const first = await pool.acquire('a1', 'A');
    const started: string[] = [];
    for (const run of ['a2', 'a3']) void pool.acquire(run, 'A').then(() => started.push(run));
    first.release();
    first.release();
    await settle();
    expect(started).to.deep.equal(['a2']);
    expect(pool.running).to.equal(1);
  });

  it('given waiting runs, when the slots close, then they are refused and no run is taken any more', async () => {
    const pool = new WorkerSlots({ slots: 1 });
    const first = await pool.acquire('a1', 'A');
    const waiting = pool.acquire('a2', 'A');
    pool.close();
    const refused = await waiting.then(() => null, (error: unknown) => error);
    expect(refused).to.be.instanceOf(SlotsClosedError);
    expect(await pool.acquire('a3', 'A').then(() => null, (error: unknown) => error)).to.be.instanceOf(SlotsClosedError);
    first.release();
    expect(pool.running).to.equal(0);
  });
});
