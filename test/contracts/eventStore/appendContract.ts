import { expect } from 'chai';
import { START } from '../../../shared/event-store/EventStore.ts';
import { anEvent, expectConflict, givenStreamAt, numbersOf, someEvents, type CurrentStore } from './contractFixtures.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function describeAppendContract(store: CurrentStore): void {
  describe('append: expected revision any', () => {
    it('given no stream, when appending 2 events expecting any, then the stream holds revisions 0 and 1', async () => {
      const result = await store().append('s', someEvents(2), 'any');
      expect(result.nextExpectedRevision).to.equal(1);
      expect((await store().readStream('s')).map((event) => event.revision)).to.deep.equal([0, 1]);
    });

    it('given a stream at revision 2, when appending 2 events expecting any, then the next expected revision is 4', async () => {
      await givenStreamAt(store(), 's', 2);
      expect((await store().append('s', someEvents(2), 'any')).nextExpectedRevision).to.equal(4);
    });
  });

  describe('append: expected revision no_stream', () => {
    it('given no stream, when appending 3 events expecting no_stream, then the next expected revision is 2', async () => {
      expect((await store().append('s', someEvents(3), 'no_stream')).nextExpectedRevision).to.equal(2);
    });

    it('given a stream at revision 2, when appending expecting no_stream, then WrongExpectedVersionError with actual 2 and nothing written', async () => {
      await givenStreamAt(store(), 's', 2);
      const error = await expectConflict(store().append('s', [anEvent(9)], 'no_stream'));
      expect([error.streamId, error.expected, error.actual]).to.deep.equal(['s', 'no_stream', 2]);
      expect(numbersOf(await store().readStream('s'))).to.deep.equal([0, 1, 2]);
    });
  });

  describe('append: expected revision stream_exists', () => {
    it('given a stream at revision 0, when appending expecting stream_exists, then the next expected revision is 1', async () => {
      await givenStreamAt(store(), 's', 0);
      expect((await store().append('s', [anEvent(1)], 'stream_exists')).nextExpectedRevision).to.equal(1);
    });

    it('given no stream, when appending expecting stream_exists, then WrongExpectedVersionError with actual no_stream', async () => {
      const error = await expectConflict(store().append('s', [anEvent(0)], 'stream_exists'));
      expect([error.expected, error.actual]).to.deep.equal(['stream_exists', 'no_stream']);
      expect(await store().readStream('s')).to.deep.equal([]);
    });
  });

  describe('append: exact expected revision', () => {
    it('given a stream at revision 2, when appending expecting 2, then the next expected revision is 3', async () => {
      await givenStreamAt(store(), 's', 2);
      expect((await store().append('s', [anEvent(3)], 2)).nextExpectedRevision).to.equal(3);
    });

    it('given a stream at revision 2, when appending expecting 1, then WrongExpectedVersionError with actual 2 and nothing written', async () => {
      await givenStreamAt(store(), 's', 2);
      const error = await expectConflict(store().append('s', [anEvent(9)], 1));
      expect([error.name, error.streamId, error.expected, error.actual]).to.deep.equal([
        'WrongExpectedVersionError',
        's',
        1,
        2,
      ]);
      expect(numbersOf(await store().readStream('s'))).to.deep.equal([0, 1, 2]);
    });

    it('given no stream, when appending expecting 0, then WrongExpectedVersionError with actual no_stream', async () => {
      const error = await expectConflict(store().append('s', [anEvent(0)], 0));
      expect([error.expected, error.actual]).to.deep.equal([0, 'no_stream']);
    });
  });

  describe('append: no events', () => {
    it('given no stream but other events, when appending nothing expecting no_stream, then revision -1 at the head position and the stream still does not exist', async () => {
      const other = await givenStreamAt(store(), 'other', 1);
      expect(await store().append('s', [], 'no_stream')).to.deep.equal({ nextExpectedRevision: -1, position: other.position });
      expect(await store().readStream('s')).to.deep.equal([]);
      expect(await store().headPosition()).to.equal(other.position);
    });

    it('given an empty log, when appending nothing expecting any, then revision -1 at START', async () => {
      expect(await store().append('s', [], 'any')).to.deep.equal({ nextExpectedRevision: -1, position: START });
    });

    it('given no stream, when appending nothing expecting stream_exists, then WrongExpectedVersionError with actual no_stream', async () => {
      const error = await expectConflict(store().append('s', [], 'stream_exists'));
      expect(error.actual).to.equal('no_stream');
    });

    it('given a stream at revision 1, when appending nothing expecting 1, then revision 1 is returned and nothing is written', async () => {
      const given = await givenStreamAt(store(), 's', 1);
      expect(await store().append('s', [], 1)).to.deep.equal({ nextExpectedRevision: 1, position: given.position });
      expect(await store().readStream('s')).to.have.length(2);
    });

    it('given a stream at revision 1, when appending nothing expecting 0, then WrongExpectedVersionError with actual 1', async () => {
      await givenStreamAt(store(), 's', 1);
      expect((await expectConflict(store().append('s', [], 0))).actual).to.equal(1);
    });
  });

  describe('append: what is recorded', () => {
    it('given an event, when it is appended, then it is recorded with a uuid, its stream, revision, position and the time', async () => {
      const before = Date.now();
      const result = await store().append('s', [anEvent(7, 'ThingNoticed')], 'no_stream');
      const [recorded] = await store().readAll();
      expect(recorded?.id).to.match(UUID);
      expect(recorded).to.deep.include({
        streamId: 's',
        revision: 0,
        position: result.position,
        type: 'ThingNoticed',
        data: { n: 7 },
        // The store stamps the type's schema version (shared/event-store/upcast.ts).
        metadata: { ...anEvent(7).metadata, version: 1 },
      });
      const recordedAt = Date.parse(recorded?.recordedAt ?? '');
      expect(recordedAt).to.be.within(before - 1000, Date.now() + 1000);
    });

    it('given 3 events in one append, when it succeeds, then the result carries the position of the last one', async () => {
      const result = await store().append('s', someEvents(3), 'no_stream');
      const log = await store().readAll();
      expect(log.map((event) => event.revision)).to.deep.equal([0, 1, 2]);
      expect(result.position).to.equal(log.at(-1)?.position);
    });

    it('given appended data, when the caller mutates its objects afterwards, then the stored event is unchanged', async () => {
      const data = { nested: { list: [1] } };
      await store().append('s', [{ ...anEvent(0), data }], 'no_stream');
      data.nested.list.push(2);
      expect((await store().readStream('s'))[0]?.data).to.deep.equal({ nested: { list: [1] } });
    });

    it('given a stored event, when a reader mutates what it read, then the next read is unchanged', async () => {
      await store().append('s', [{ ...anEvent(0), data: { nested: { list: [1] } } }], 'no_stream');
      const [fromStream] = await store().readStream('s');
      const [fromAll] = await store().readAll();
      (fromStream?.data as { nested: { list: number[] } }).nested.list.push(2);
      (fromAll?.data as { nested: { list: number[] } }).nested.list.push(3);
      if (fromAll) fromAll.metadata.correlation_id = 'changed';
      const [again] = await store().readAll();
      expect(again?.data).to.deep.equal({ nested: { list: [1] } });
      expect(again?.metadata.correlation_id).to.equal('correlation-0');
    });
  });
}
