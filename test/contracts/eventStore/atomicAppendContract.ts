import { expect } from 'chai';
import type { EventStore, StreamAppend } from '../../../shared/event-store/EventStore.ts';
import { anEvent, expectConflict, givenStreamAt, numbersOf, someEvents, type CurrentStore } from './contractFixtures.ts';

/** The store's appendAtomically; a store without one fails here rather than silently skipping. */
const atomically = (store: EventStore, appends: ReadonlyArray<StreamAppend>) => {
  if (!store.appendAtomically) throw new Error('this store does not offer appendAtomically');
  return store.appendAtomically(appends);
};

/** For the stores that offer appendAtomically (multi-stream transactions). */
export function describeAtomicAppendContract(store: CurrentStore): void {
  describe('appendAtomically', () => {
    it('given two new streams, when both are appended atomically expecting no_stream, then both hold their events and each result is at its index', async () => {
      const [first, second] = await atomically(store(), [
        { streamId: 'reservation', events: [anEvent(1)], expected: 'no_stream' },
        { streamId: 'owner', events: someEvents(2, 10), expected: 'no_stream' },
      ]);
      const log = await store().readAll();
      expect(log.map((event) => [event.streamId, event.data.n])).to.deep.equal([['reservation', 1], ['owner', 10], ['owner', 11]]);
      expect([first?.nextExpectedRevision, first?.position]).to.deep.equal([0, log[0]?.position]);
      expect([second?.nextExpectedRevision, second?.position]).to.deep.equal([1, log[2]?.position]);
    });

    it('given events sharing one metadata object and events with their own, when appended atomically, then each reads back with its own metadata', async () => {
      // Given: a command's shape (one metadata object across both streams), then events of their own
      const shared = anEvent(1).metadata;
      const own = someEvents(2, 20);

      // When
      await atomically(store(), [
        { streamId: 'reservation', events: [{ ...anEvent(1), metadata: shared }], expected: 'no_stream' },
        { streamId: 'owner', events: [{ ...anEvent(2), metadata: shared }, ...own], expected: 'no_stream' },
      ]);

      // Then
      const log = await store().readAll();
      expect(log.map((event) => event.metadata.correlation_id)).to.deep.equal(['correlation-1', 'correlation-1', 'correlation-20', 'correlation-21']);
    });

    it('given the second stream exists, when both are appended atomically expecting no_stream, then its conflict is thrown and the first stream is not written either', async () => {
      await givenStreamAt(store(), 'owner', 0);
      const error = await expectConflict(
        atomically(store(), [
          { streamId: 'reservation', events: [anEvent(1)], expected: 'no_stream' },
          { streamId: 'owner', events: [anEvent(2)], expected: 'no_stream' },
        ]),
      );
      expect([error.streamId, error.expected, error.actual]).to.deep.equal(['owner', 'no_stream', 0]);
      expect(await store().readStream('reservation')).to.deep.equal([]);
      expect(numbersOf(await store().readStream('owner'))).to.deep.equal([0]);
    });

    it('given 20 creators racing for one reservation, each with its own owner stream, when all append atomically at once, then exactly one wins and only its owner stream exists', async () => {
      const outcomes = await Promise.allSettled(
        Array.from({ length: 20 }, (_, index) =>
          atomically(store(), [
            { streamId: 'unique-key', events: [anEvent(index)], expected: 'no_stream' },
            { streamId: `owner-${index}`, events: [anEvent(100 + index)], expected: 'no_stream' },
          ]),
        ),
      );
      const winners = outcomes.flatMap((outcome, index) => (outcome.status === 'fulfilled' ? [index] : []));
      expect(winners).to.have.length(1);
      const log = await store().readAll();
      expect(log.map((event) => event.streamId)).to.deep.equal(['unique-key', `owner-${winners[0]}`]);
    });

    it('given an atomic run that conflicts, when a plain append is made in the same tick, then the plain append is written all the same', async () => {
      await givenStreamAt(store(), 'owner', 0);
      const [refused, plain] = await Promise.allSettled([
        atomically(store(), [
          { streamId: 'reservation', events: [anEvent(1)], expected: 'no_stream' },
          { streamId: 'owner', events: [anEvent(2)], expected: 'no_stream' },
        ]),
        store().append('other', [anEvent(3)], 'no_stream'),
      ]);
      expect([refused?.status, plain?.status]).to.deep.equal(['rejected', 'fulfilled']);
      expect((await store().readAll()).map((event) => event.streamId)).to.deep.equal(['owner', 'other']);
    });

    it('given one stream named twice, when appending atomically, then the call is refused and nothing is written', async () => {
      let refused: unknown;
      try {
        await atomically(store(), [
          { streamId: 's', events: [anEvent(1)], expected: 'any' },
          { streamId: 's', events: [anEvent(2)], expected: 'any' },
        ]);
      } catch (error) {
        refused = error;
      }
      expect(String(refused)).to.match(/appears twice/);
      expect(await store().readAll()).to.deep.equal([]);
    });
  });
}

/**
 * For the stores without multi-stream transactions (EventStoreDB): the appendAtomically clauses do
 * not apply, and the store must not pretend otherwise, since commit() would then take its word.
 */
export function describeWithoutAtomicAppends(store: CurrentStore): void {
  describe('appendAtomically (not offered: commit() appends one stream at a time, in order)', () => {
    it('given a store declared without multi-stream transactions, when asked for appendAtomically, then it has none', () => {
      expect(store().appendAtomically).to.equal(undefined);
    });
  });
}
