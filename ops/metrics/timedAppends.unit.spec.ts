import { expect } from 'chai';
import type { EventStore } from '../../shared/event-store/EventStore.ts';
import { timedAppends } from './timedAppends.ts';

const fakeStore = (options: { atomic: boolean; fail?: boolean }): EventStore & { calls: string[] } => {
  const calls: string[] = [];
  const result = { nextExpectedRevision: 0, position: 1n };
  const store: EventStore & { calls: string[] } = {
    calls,
    append: async () => {
      calls.push('append');
      if (options.fail) throw new Error('conflict');
      return result;
    },
    readStream: async () => (calls.push('readStream'), []),
    readAll: async () => (calls.push('readAll'), []),
    subscribeToAll: () => (calls.push('subscribeToAll'), { close: async () => undefined }),
    headPosition: async () => (calls.push('headPosition'), 0n),
    close: async () => void calls.push('close'),
  };
  if (options.atomic) store.appendAtomically = async (appends) => (calls.push('appendAtomically'), appends.map(() => result));
  return store;
};

describe('timedAppends', () => {
  it('given appends and atomic appends, when made, then each is observed once with a duration and reaches the store', async () => {
    const store = fakeStore({ atomic: true });
    const observed: number[] = [];
    const timed = timedAppends(store, (seconds) => observed.push(seconds));
    await timed.append('a', [], 'any');
    await timed.appendAtomically?.([{ streamId: 'b', events: [], expected: 'any' }]);
    expect(store.calls).to.deep.equal(['append', 'appendAtomically']);
    expect(observed).to.have.length(2);
    for (const seconds of observed) expect(seconds).to.be.a('number').and.at.least(0);
  });

  it('given a failing append, when made, then it is observed too and the error reaches the caller', async () => {
    const observed: number[] = [];
    const timed = timedAppends(fakeStore({ atomic: false, fail: true }), (seconds) => observed.push(seconds));
    let error: unknown;
    await timed.append('a', [], 'any').catch((caught: unknown) => (error = caught));
    expect(String(error)).to.include('conflict');
    expect(observed).to.have.length(1);
  });

  it('given a store without multi-stream transactions, when wrapped, then the wrapper has none either; reads pass through unobserved', async () => {
    const store = fakeStore({ atomic: false });
    const observed: number[] = [];
    const timed = timedAppends(store, (seconds) => observed.push(seconds));
    expect(timed.appendAtomically).to.equal(undefined);
    await timed.readStream('a');
    await timed.readAll();
    await timed.headPosition();
    await timed.subscribeToAll({ after: 0n, onEvent: () => undefined }).close();
    await timed.close();
    expect(store.calls).to.deep.equal(['readStream', 'readAll', 'headPosition', 'subscribeToAll', 'close']);
    expect(observed).to.deep.equal([]);
  });
});
