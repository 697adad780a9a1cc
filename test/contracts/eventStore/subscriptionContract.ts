import { expect } from 'chai';
import { START, type Position, type RecordedEvent } from '../../../shared/event-store/EventStore.ts';
import { anEvent, delay, numbersOf, someEvents, waitUntil, type CurrentStore } from './contractFixtures.ts';

export function describeSubscriptionContract(store: CurrentStore): void {
  describe('subscribeToAll', () => {
    it('given 20 events, when subscribing from START while 30 more are appended, then all 50 arrive once each in log order, caught up once', async () => {
      for (let n = 0; n < 20; n += 1) await store().append(`s-${n % 3}`, [anEvent(n)], 'any');
      const received: RecordedEvent[] = [];
      const caughtUp: Position[] = [];
      const subscription = store().subscribeToAll({
        after: START,
        onEvent: async (event) => {
          received.push(event);
          // Slow handler: live appends land while history is still being delivered.
          if (received.length % 4 === 0) await delay(1);
        },
        onCaughtUp: (position) => caughtUp.push(position),
      });
      for (let n = 20; n < 50; n += 1) {
        await store().append(`s-${n % 3}`, [anEvent(n)], 'any');
        if (n % 5 === 0) await delay(2);
      }
      await waitUntil(() => received.length >= 50, '50 events are received');
      await delay(50); // a repeat would arrive now
      await subscription.close();
      const log = await store().readAll();
      expect(received.map((event) => event.position)).to.deep.equal(log.map((event) => event.position));
      expect(numbersOf(received)).to.deep.equal(Array.from({ length: 50 }, (_, n) => n));
      expect(caughtUp).to.have.length(1);
    });

    it('given 3 events, when subscribing from START, then they arrive, then caught up at the third position, then live events follow', async () => {
      const given = await store().append('s', someEvents(3), 'no_stream');
      const seen: unknown[] = [];
      const subscription = store().subscribeToAll({
        after: START,
        onEvent: (event) => {
          seen.push(event.data.n);
        },
        onCaughtUp: (position) => seen.push(position),
      });
      await waitUntil(() => seen.length === 4, 'history and caught-up are seen');
      await store().append('s', [anEvent(3)], 2);
      await waitUntil(() => seen.length === 5, 'the live event is seen');
      await subscription.close();
      expect(seen).to.deep.equal([0, 1, 2, given.position, 3]);
    });

    it('given an empty log, when subscribing, then caught up at START, and an append is delivered promptly', async () => {
      const caughtUp: Position[] = [];
      const received: RecordedEvent[] = [];
      const subscription = store().subscribeToAll({
        after: START,
        onEvent: (event) => {
          received.push(event);
        },
        onCaughtUp: (position) => caughtUp.push(position),
      });
      await waitUntil(() => caughtUp.length === 1, 'caught up');
      await store().append('s', [anEvent(0)], 'no_stream');
      // Prompt means woken by this store's own commit, not by a poll: the adapters that poll run this
      // contract with an hour between polls, so a delivery within the wait is the commit's doing.
      await waitUntil(() => received.length === 1, 'the append is delivered');
      await subscription.close();
      expect(caughtUp).to.deep.equal([START]);
    });

    it('given 10 events of two streams, the last not accepted, when subscribing with accepts (one stream) while 10 more are appended, then only that stream\'s arrive, each once, in order and whole, and caught up once', async () => {
      for (let n = 0; n < 10; n += 1) await store().append(n % 2 === 0 ? 'kept' : 'passed', [anEvent(n)], 'any');
      const received: RecordedEvent[] = [];
      const caughtUp: Position[] = [];
      const judged: string[] = [];
      const subscription = store().subscribeToAll({
        after: START,
        accepts: (event) => {
          judged.push(event.type);
          return event.streamId === 'kept';
        },
        onEvent: (event) => void received.push(event),
        onCaughtUp: (position) => caughtUp.push(position),
      });
      // Caught up although the head (the tenth event) is one it passes over.
      await waitUntil(() => caughtUp.length === 1, 'caught up');
      for (let n = 10; n < 20; n += 1) await store().append(n % 2 === 0 ? 'kept' : 'passed', [anEvent(n)], 'any');
      await waitUntil(() => received.length >= 10, '10 events are received');
      await delay(30);
      await subscription.close();
      // Whole: every field as a read of the stream gives it (a store's private decoding aids aside).
      const fields = ({ position, streamId, revision, id, type, data, metadata, recordedAt }: RecordedEvent) => ({ position, streamId, revision, id, type, data, metadata, recordedAt });
      expect(received.map(fields)).to.deep.equal((await store().readStream('kept')).map(fields));
      expect(numbersOf(received)).to.deep.equal([0, 2, 4, 6, 8, 10, 12, 14, 16, 18]);
      expect(caughtUp).to.have.length(1);
      expect(judged.length, 'every event judged').to.be.at.least(20);
    });

    it('given 10 events, when subscribing after the fifth position, then only the last 5 arrive', async () => {
      await store().append('s', someEvents(10), 'no_stream');
      const fifth = (await store().readAll({ maxCount: 5 })).at(-1)?.position ?? START;
      const received: RecordedEvent[] = [];
      const subscription = store().subscribeToAll({ after: fifth, onEvent: (event) => void received.push(event) });
      await waitUntil(() => received.length >= 5, '5 events are received');
      await delay(30);
      await subscription.close();
      expect(numbersOf(received)).to.deep.equal([5, 6, 7, 8, 9]);
    });

    it('given a handler in flight, when closing, then close waits for it and nothing more is delivered', async () => {
      await store().append('s', someEvents(3), 'no_stream');
      let release = (): void => {};
      const gate = new Promise<void>((resolve) => (release = resolve));
      let started = 0;
      let finished = 0;
      const subscription = store().subscribeToAll({
        after: START,
        onEvent: async () => {
          started += 1;
          await gate;
          finished += 1;
        },
      });
      await waitUntil(() => started === 1, 'the first handler starts');
      let closed = false;
      const closing = subscription.close().then(() => (closed = true));
      await delay(30);
      expect(closed, 'close resolved while the handler was still running').to.equal(false);
      release();
      await closing;
      expect(finished).to.equal(1);
      await store().append('s', someEvents(2, 3), 2);
      await delay(100);
      expect(started).to.equal(1);
    });

    it('given a handler that throws on the second event, when events flow, then onError gets that error and the subscription stops there', async () => {
      const failure = new Error('handler failed');
      const delivered: unknown[] = [];
      const errors: unknown[] = [];
      const subscription = store().subscribeToAll({
        after: START,
        onEvent: (event) => {
          delivered.push(event.data.n);
          if (event.data.n === 1) throw failure;
        },
        onError: (error) => errors.push(error),
      });
      await store().append('s', someEvents(3), 'no_stream');
      await waitUntil(() => errors.length === 1, 'the error is reported');
      await store().append('s', [anEvent(3)], 2);
      await delay(100);
      await subscription.close();
      expect(errors).to.deep.equal([failure]);
      expect(delivered).to.deep.equal([0, 1]);
    });
  });
}
