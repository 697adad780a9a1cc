import { expect } from 'chai';
import { MemoryEventStore } from '../../test/support/MemoryEventStore.ts';
import { WrongExpectedVersionError, type AppendResult, type EventStore, type ExpectedRevision } from '../../shared/event-store/EventStore.ts';
import { metadataFor } from '../../shared/events.ts';
import { withoutAtomicAppends } from '../../test/support/withoutAtomicAppends.ts';
import type { CompanionAppend } from './CompanionAppend.ts';
import { commit } from './commit.ts';

const metadata = metadataFor(null, new Date('2026-01-01T00:00:00.000Z'), 'c-1');
const append = (streamId: string, expected: ExpectedRevision = 'no_stream') => ({ streamId, events: [{ type: 'Noted', data: { on: streamId }, metadata }], expected });

/** A companion recording what it was told. */
const companion = (streamId: string, options: Partial<CompanionAppend> & { expected?: ExpectedRevision } = {}) => {
  const told: { committed: AppendResult[]; failed: unknown[] } = { committed: [], failed: [] };
  const { expected, ...rest } = options;
  const planned: CompanionAppend = {
    append: append(streamId, expected),
    guessed: false,
    committed: (result) => void told.committed.push(result),
    ...rest,
  };
  return { planned, told };
};

const streamsInLogOrder = async (store: EventStore) => (await store.readAll()).map((event) => event.streamId);

describe('commit', () => {
  for (const [kind, wrap] of [
    ['with atomic appends', (store: EventStore) => store],
    ['one stream at a time', withoutAtomicAppends],
  ] as const) {
    describe(kind, () => {
      it('given companions first and after, when committed, then the log holds them first, the main stream, the others, and each is told its result', async () => {
        const store = new MemoryEventStore();
        const before = companion('before', { first: true });
        const after = companion('after');

        const committed = await commit(wrap(store), append('main'), [after.planned, before.planned]);

        expect(await streamsInLogOrder(store)).to.deep.equal(['before', 'main', 'after']);
        expect(before.told.committed.map((result) => result.position)).to.deep.equal([1n]);
        expect(after.told.committed.map((result) => result.position)).to.deep.equal([3n]);
        expect(committed.main?.position).to.equal(2n);
        expect(committed.position).to.equal(3n);
      });

      it('given nothing to write, when committed, then nothing is appended', async () => {
        const store = new MemoryEventStore();
        expect(await commit(wrap(store), null, [])).to.deep.equal({ main: null, position: null });
        expect(await store.readAll()).to.deep.equal([]);
      });
    });
  }

  it('given a store with atomic appends and a stale companion, when committed, then nothing is written and the conflict is thrown', async () => {
    const store = new MemoryEventStore();
    await store.append('after', append('after').events, 'no_stream');
    const before = companion('before', { first: true });
    const after = companion('after');

    const error = await commit(store, append('main'), [before.planned, after.planned]).catch((thrown: unknown) => thrown);

    expect(error).to.be.instanceOf(WrongExpectedVersionError);
    expect(await streamsInLogOrder(store)).to.deep.equal(['after']);
    expect(before.told.committed).to.deep.equal([]);
  });

  describe('one stream at a time, when an append fails', () => {
    it('given a main stream that conflicts, when committed, then the companion written first stays written, is told so, and the conflict is thrown', async () => {
      const store = new MemoryEventStore();
      await store.append('main', append('main').events, 'no_stream');
      const before = companion('before', { first: true });
      const after = companion('after');

      const error = await commit(withoutAtomicAppends(store), append('main'), [before.planned, after.planned]).catch((thrown: unknown) => thrown);

      expect(error).to.be.instanceOf(WrongExpectedVersionError);
      expect(await streamsInLogOrder(store)).to.deep.equal(['main', 'before']);
      expect(before.told.committed).to.have.length(1);
      expect(after.told.committed).to.deep.equal([]);
    });

    it('given a companion after the main stream that conflicts, when committed, then only it is planned again and written', async () => {
      const store = new MemoryEventStore();
      await store.append('after', append('after').events, 'no_stream');
      const replanned = companion('after', { expected: 0 });
      let again = 0;
      const after = companion('after', {
        guessed: true,
        again: async () => {
          again += 1;
          return replanned.planned;
        },
      });

      const committed = await commit(withoutAtomicAppends(store), append('main'), [after.planned]);

      expect(again).to.equal(1);
      expect(await streamsInLogOrder(store)).to.deep.equal(['after', 'main', 'after']);
      expect(replanned.told.committed.map((result) => result.position)).to.deep.equal([3n]);
      expect(committed.main?.position).to.equal(2n);
      expect(committed.position).to.equal(3n);
    });

    it('given a companion after the main stream that cannot be planned again, when committed, then it is told why and the main stream stays committed', async () => {
      const store = new MemoryEventStore();
      await store.append('after', append('after').events, 'no_stream');
      const after = companion('after', {
        again: async () => {
          throw new Error('gone');
        },
        failed: (error) => void after.told.failed.push(error),
      });

      const committed = await commit(withoutAtomicAppends(store), append('main'), [after.planned]);

      expect(String(after.told.failed[0])).to.contain('gone');
      expect(committed.main?.position).to.equal(2n);
      expect(committed.position).to.equal(2n);
    });
  });
});
