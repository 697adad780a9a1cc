import { expect } from 'chai';
import { WrongExpectedVersionError } from '../../../shared/event-store/EventStore.ts';
import { anEvent, expectStrictlyIncreasing, givenStreamAt, numbersOf, type CurrentStore } from './contractFixtures.ts';

export function describeConcurrencyContract(store: CurrentStore): void {
  describe('concurrent appends', () => {
    it('given a stream at revision 4, when 50 appends expecting 4 race, then exactly one succeeds and 49 get WrongExpectedVersionError with actual 5', async () => {
      await givenStreamAt(store(), 's', 4);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 50 }, (_, n) => store().append('s', [anEvent(100 + n)], 4)),
      );
      const winners = outcomes.filter((outcome) => outcome.status === 'fulfilled');
      const losers = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
      expect(winners).to.have.length(1);
      expect(losers).to.have.length(49);
      for (const loser of losers) {
        expect(loser).to.be.instanceOf(WrongExpectedVersionError);
        expect((loser as WrongExpectedVersionError).actual).to.equal(5);
      }
      const stream = await store().readStream('s');
      expect(stream.map((event) => event.revision)).to.deep.equal([0, 1, 2, 3, 4, 5]);
    });

    it('given 100 new streams, when appending to all of them at once expecting no_stream, then all succeed at distinct positions', async () => {
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, n) => store().append(`s-${n}`, [anEvent(n)], 'no_stream')),
      );
      expect(results.every((result) => result.nextExpectedRevision === 0)).to.equal(true);
      // Concurrent appends may commit in any order; each must still get its own position.
      const positions = results.map((result) => result.position).sort((a, b) => (a < b ? -1 : 1));
      expectStrictlyIncreasing(positions);
      const log = await store().readAll();
      expect(log.map((event) => event.position)).to.deep.equal(positions);
      expect(new Set(log.map((event) => event.streamId)).size).to.equal(100);
    });

    it('given one stream, when 30 appends expecting any race, then all succeed, each at its own revision from 0 to 29', async () => {
      const zeroTo29 = Array.from({ length: 30 }, (_, n) => n);
      const results = await Promise.all(zeroTo29.map((n) => store().append('s', [anEvent(n)], 'any')));
      expect(results.map((result) => result.nextExpectedRevision).sort((a, b) => a - b)).to.deep.equal(zeroTo29);
      const stream = await store().readStream('s');
      expect(stream.map((event) => event.revision)).to.deep.equal(zeroTo29);
      expect(numbersOf(stream).sort((a, b) => Number(a) - Number(b))).to.deep.equal(zeroTo29);
    });
  });
}
