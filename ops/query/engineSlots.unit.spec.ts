import { expect } from 'chai';
import { EngineSlots } from './engineSlots.ts';
import { QueryRun } from './queryRun.ts';
import { failure } from '../../test/support/cloud/queryRequest.ts';

describe('Embedded-engine slots (QUERY_ENGINE_CONCURRENCY)', () => {
  const run = (statementTimeoutMs: number) => new QueryRun({ statementTimeoutMs, signal: new AbortController().signal });

  it('given every slot taken, when another query asks, then it waits for a release, in order', async () => {
    const slots = new EngineSlots(1);
    const first = run(5000);
    const release = await slots.acquire(first);
    const order: string[] = [];
    const second = run(5000);
    const waiting = slots.acquire(second).then((next) => {
      order.push('second');
      return next;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(order).to.deep.equal([]);
    release();
    (await waiting)();
    expect(order).to.deep.equal(['second']);
    first.dispose();
    second.dispose();
  });

  it('given a query whose timeout passes while waiting, when it waits, then timeout and its place is given up', async () => {
    const slots = new EngineSlots(1);
    const holder = run(5000);
    const release = await slots.acquire(holder);
    const late = run(50);
    await failure(() => slots.acquire(late), 'timeout');
    release();
    const next = run(5000);
    (await slots.acquire(next))();
    holder.dispose();
    late.dispose();
    next.dispose();
  });
});
