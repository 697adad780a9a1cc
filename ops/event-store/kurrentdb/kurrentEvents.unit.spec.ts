import { START as LOG_START, type JSONRecordedEvent, type RecordedEvent as KurrentRecordedEvent } from '@kurrent/kurrentdb-client';
import { expect } from 'chai';
import { START } from '../../../shared/event-store/EventStore.ts';
import { anEvent } from '../../../test/contracts/eventStore/contractFixtures.ts';
import { eventDataOf, ourEventOf, ourStreamId, ourStreamsFilter, positionOf, readPositionAfter, recordedEventOf, storedStreamName } from './kurrentEvents.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** An event as the client hands it back from a read of $all: JSON parsed, bigint revision, Date created. */
const fromServer = (overrides: Partial<JSONRecordedEvent> = {}): KurrentRecordedEvent => ({
  streamId: 'ns-item-1',
  id: '0b5e3f3c-6a57-4b8e-9d8b-5f4a3c2b1a00',
  isJson: true,
  revision: 2n,
  type: 'ThingHappened',
  created: new Date('2024-05-01T10:00:01.234Z'),
  data: { n: 7 },
  metadata: { ...anEvent(7).metadata, version: 1 },
  position: { commit: 4_096n, prepare: 4_096n },
  ...overrides,
});

describe('KurrentDB events at the edge', () => {
  describe('stream names', () => {
    it('given a prefix, when naming a stream and reading the name back, then the same stream id', () => {
      expect(storedStreamName('ns-', 'item-1')).to.equal('ns-item-1');
      expect(ourStreamId('ns-', 'ns-item-1')).to.equal('item-1');
    });

    it('given system streams and streams of another prefix, when asked whose they are, then not ours', () => {
      expect([ourStreamId('', '$stats-127.0.0.1:2113'), ourStreamId('', '$$item-1'), ourStreamId('ns-', 'other-item-1')]).to.deep.equal([null, null, null]);
      expect(ourStreamId('', 'item-1')).to.equal('item-1');
    });

    it('given no prefix, when filtering $all, then every stream but the system ones; given one, then its streams', () => {
      expect(ourStreamsFilter('')).to.deep.include({ filterOn: 'streamName', regex: '^[^$]' });
      expect(ourStreamsFilter('ns-')).to.deep.include({ filterOn: 'streamName', prefixes: ['ns-'] });
    });
  });

  describe('positions', () => {
    it('given START, when reading after it, then from the start of the log; given a position, then from that position (commit = prepare)', () => {
      expect(readPositionAfter(START)).to.equal(LOG_START);
      expect(readPositionAfter(4_096n)).to.deep.equal({ commit: 4_096n, prepare: 4_096n });
    });

    it('given an event, when asked its position, then its commit position', () => {
      expect(positionOf(fromServer({ position: { commit: 10n, prepare: 9n } }))).to.equal(10n);
    });

    it('given an event without a position, or with the server\'s "none" (u64 max), when asked its position, then it is refused, never 0', () => {
      expect(() => positionOf(fromServer({ position: undefined }))).to.throw(/no log position/);
      expect(() => positionOf(fromServer({ position: { commit: 2n ** 64n - 1n, prepare: 2n ** 64n - 1n } }))).to.throw(/no log position/);
    });
  });

  describe('eventDataOf', () => {
    it('given an event to append, when mapped, then JSON with a fresh uuid and the metadata stamped with the schema version', () => {
      const first = eventDataOf(anEvent(1, 'ItemUpdated'));
      const second = eventDataOf(anEvent(1, 'ItemUpdated'));
      expect(first.id).to.match(UUID);
      expect(first.id).to.not.equal(second.id);
      expect(first).to.deep.include({ contentType: 'application/json', type: 'ItemUpdated', data: { n: 1 } });
      expect(first.metadata).to.deep.equal({ ...anEvent(1).metadata, version: 2 });
    });

    it('given data the caller changes after the call, when mapped, then what is sent is the data at the call', () => {
      const data = { nested: { list: [1] } };
      const mapped = eventDataOf({ ...anEvent(0), data });
      data.nested.list.push(2);
      expect(mapped.data).to.deep.equal({ nested: { list: [1] } });
    });
  });

  describe('recordedEventOf', () => {
    it('given an event from the server, when decoded, then its id, our stream id, revision, commit position, data, metadata and created time', () => {
      expect(recordedEventOf(fromServer(), 'item-1')).to.deep.equal({
        id: '0b5e3f3c-6a57-4b8e-9d8b-5f4a3c2b1a00',
        streamId: 'item-1',
        revision: 2,
        position: 4_096n,
        type: 'ThingHappened',
        data: { n: 7 },
        metadata: { ...anEvent(7).metadata, version: 1 },
        recordedAt: '2024-05-01T10:00:01.234Z',
      });
    });

    it('given what eventDataOf sends, when the server hands it back, then the decoded event carries the data and metadata appended', () => {
      const sent = eventDataOf({ ...anEvent(3), data: { nested: { list: [1, 2] }, text: 'é' } });
      const back = recordedEventOf(fromServer({ id: sent.id, data: JSON.parse(JSON.stringify(sent.data)), metadata: JSON.parse(JSON.stringify(sent.metadata)) }), 'item-1');
      expect([back.id, back.data, back.metadata]).to.deep.equal([sent.id, { nested: { list: [1, 2] }, text: 'é' }, { ...anEvent(3).metadata, version: 1 }]);
    });

    it('given an ItemUpdated written before schema versions, when decoded, then it is upcast like every adapter does', () => {
      const old = fromServer({ type: 'ItemUpdated', data: { changes: { name: 'renamed' }, version: 3, revision_laui: null }, metadata: { ...anEvent(1).metadata } });
      const decoded = recordedEventOf(old, 'item-1');
      expect([decoded.type, decoded.metadata.version]).to.deep.equal(['ItemUpdated', 2]);
    });

    it('given an event that is not JSON, or whose data or metadata is not an object, when decoded, then it is refused with its stream and revision', () => {
      const binary: KurrentRecordedEvent = { ...fromServer(), isJson: false, data: new Uint8Array([1]), metadata: undefined } as KurrentRecordedEvent;
      expect(() => recordedEventOf(binary, 'item-1')).to.throw(/revision 2 of ns-item-1/);
      expect(() => recordedEventOf(fromServer({ data: [1, 2] }), 'item-1')).to.throw(/not an event of this service/);
      expect(() => recordedEventOf(fromServer({ metadata: undefined }), 'item-1')).to.throw(/not an event of this service/);
    });
  });

  describe('ourEventOf', () => {
    it('given a result in a stream of ours, when filtered, then the decoded event under our stream id', () => {
      expect(ourEventOf({ event: fromServer() }, 'ns-')?.streamId).to.equal('item-1');
    });

    it('given system events, events of another prefix and unresolved links, when filtered, then none is ours', () => {
      expect([
        ourEventOf({ event: fromServer({ type: '$metadata' }) }, 'ns-'),
        ourEventOf({ event: fromServer({ streamId: '$ce-item' }) }, ''),
        ourEventOf({ event: fromServer({ streamId: 'other-item-1' }) }, 'ns-'),
        ourEventOf({}, 'ns-'),
      ]).to.deep.equal([null, null, null, null]);
    });
  });
});
