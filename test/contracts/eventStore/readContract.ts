import { expect } from 'chai';
import { START } from '../../../shared/event-store/EventStore.ts';
import { anEvent, expectStrictlyIncreasing, givenStreamAt, numbersOf, someEvents, type CurrentStore } from './contractFixtures.ts';

export function describeReadContract(store: CurrentStore): void {
  describe('readStream', () => {
    // Revisions 0..4 of 's', interleaved with another stream so a wrong filter shows.
    beforeEach(async () => {
      for (let n = 0; n < 5; n += 1) {
        await store().append('s', [anEvent(n)], 'any');
        await store().append('other', [anEvent(100 + n)], 'any');
      }
    });

    it('given no stream, when reading it, then it is empty', async () => {
      expect(await store().readStream('missing')).to.deep.equal([]);
    });

    it('given a stream at revision 4, when reading it, then its 5 events come in revision order', async () => {
      const events = await store().readStream('s');
      expect(events.map((event) => event.revision)).to.deep.equal([0, 1, 2, 3, 4]);
      expect(numbersOf(events)).to.deep.equal([0, 1, 2, 3, 4]);
      expect(events.every((event) => event.streamId === 's')).to.equal(true);
    });

    it('given a stream at revision 4, when reading from revision 2, then revisions 2 to 4', async () => {
      expect(numbersOf(await store().readStream('s', { fromRevision: 2 }))).to.deep.equal([2, 3, 4]);
    });

    it('given a stream at revision 4, when reading to revision 2, then revisions 0 to 2 (inclusive bound)', async () => {
      expect(numbersOf(await store().readStream('s', { toRevision: 2 }))).to.deep.equal([0, 1, 2]);
    });

    it('given a stream at revision 4, when reading from 1 to 3, then revisions 1 to 3', async () => {
      expect(numbersOf(await store().readStream('s', { fromRevision: 1, toRevision: 3 }))).to.deep.equal([1, 2, 3]);
    });

    it('given a stream at revision 4, when reading from revision 5, then it is empty', async () => {
      expect(await store().readStream('s', { fromRevision: 5 })).to.deep.equal([]);
    });
  });

  describe('readAll and headPosition', () => {
    it('given an empty log, when asking the head, then START, and reading all gives nothing', async () => {
      expect(await store().headPosition()).to.equal(START);
      expect(await store().readAll()).to.deep.equal([]);
    });

    it('given 25 events over 3 streams, when reading pages of 10, then 10, 10, 5 then nothing, in append order', async () => {
      for (let n = 0; n < 25; n += 1) await store().append(`s-${n % 3}`, [anEvent(n)], 'any');
      const pages = [];
      let after = START;
      for (let page = await store().readAll({ after, maxCount: 10 }); page.length > 0; page = await store().readAll({ after, maxCount: 10 })) {
        pages.push(page);
        after = page.at(-1)?.position ?? after;
      }
      expect(pages.map((page) => page.length)).to.deep.equal([10, 10, 5]);
      const all = pages.flat();
      expect(numbersOf(all)).to.deep.equal(Array.from({ length: 25 }, (_, n) => n));
      expectStrictlyIncreasing(all.map((event) => event.position));
      expect(after).to.equal(await store().headPosition());
    });

    it('given 1005 events, when reading all without maxCount, then a page of 1000 then the last 5', async () => {
      await store().append('bulk', someEvents(1005), 'no_stream');
      const first = await store().readAll();
      expect(first).to.have.length(1000);
      const rest = await store().readAll({ after: first.at(-1)?.position ?? START });
      expect(numbersOf(rest)).to.deep.equal([1000, 1001, 1002, 1003, 1004]);
    });

    it('given 3 events, when reading after the second position, then only the third', async () => {
      await store().append('s', someEvents(3), 'no_stream');
      const [, second] = await store().readAll();
      expect(numbersOf(await store().readAll({ after: second?.position ?? START }))).to.deep.equal([2]);
    });

    it('given sequential appends to several streams, when each commits, then its position is beyond the previous one and is the head', async () => {
      const positions = [];
      for (let n = 0; n < 10; n += 1) {
        const result = await store().append(`s-${n % 4}`, someEvents(1 + (n % 3), n * 10), 'any');
        positions.push(result.position);
        expect(await store().headPosition()).to.equal(result.position);
      }
      expectStrictlyIncreasing(positions);
      expectStrictlyIncreasing((await store().readAll()).map((event) => event.position));
    });

    it('given a stream at revision 1 and a later append, when reading all, then events carry their stream revisions', async () => {
      await givenStreamAt(store(), 'a', 1);
      await store().append('b', [anEvent(7)], 'no_stream');
      const log = await store().readAll();
      expect(log.map((event) => [event.streamId, event.revision])).to.deep.equal([
        ['a', 0],
        ['a', 1],
        ['b', 0],
      ]);
    });
  });
}
