import { expect } from 'chai';
import type { EventStore } from '../../shared/event-store/EventStore.ts';
import type { EventMetadata } from '../../shared/events.ts';
import { MemoryEventStore } from '../../test/support/MemoryEventStore.ts';
import { releaseUniqueKey, reserveUniqueKeyAndCreate, uniqueKeyDecider, uniqueKeyStream } from './uniqueKey.ts';
import type { UniqueKeyEvent } from '../../shared/domain-events/uniqueKeyEvents.ts';
import { deciderSpecification } from '../../test/support/deciderSpecification.ts';
import { withoutAtomicAppends } from '../../test/support/withoutAtomicAppends.ts';

const metadata: EventMetadata = { user_laui: null, correlation_id: 'c', causation_id: null, at: '2026-01-01T00:00:00.000Z' };
const created = (n: number) => [{ type: 'ThingCreated', data: { n }, metadata }];
const reservation = (owner: string) => ({ key: 'k', ownerStream: owner, conflictDetail: 'Item already exists', metadata });

describe('reserveUniqueKeyAndCreate', () => {
  for (const [kind, wrap] of [['with atomic appends', (store: EventStore) => store], ['one stream at a time', withoutAtomicAppends]] as const) {
    describe(kind, () => {
      it('given a key never used, when created, then the reservation names the owner and the owner stream holds its events', async () => {
        const store = new MemoryEventStore();
        await reserveUniqueKeyAndCreate(wrap(store), reservation('item-a'), created(1));
        expect((await store.readStream(uniqueKeyStream('k'))).map((event) => event.data.owner)).to.deep.equal(['item-a']);
        expect((await store.readStream('item-a')).map((event) => event.data.n)).to.deep.equal([1]);
      });

      it('given a key taken by another owner, when created, then 409 and the new owner stream is never written', async () => {
        const store = new MemoryEventStore();
        await reserveUniqueKeyAndCreate(wrap(store), reservation('item-a'), created(1));
        const refused = await reserveUniqueKeyAndCreate(wrap(store), reservation('item-b'), created(2)).then(
          () => null,
          (error: unknown) => error as { status?: number },
        );
        expect(refused?.status).to.equal(409);
        expect(await store.readStream('item-b')).to.deep.equal([]);
      });

      it('given a key released by its owner, when another owner creates, then it takes the key the long way and its stream is written', async () => {
        const store = new MemoryEventStore();
        await reserveUniqueKeyAndCreate(wrap(store), reservation('item-a'), created(1));
        await releaseUniqueKey(store, { key: 'k', ownerStream: 'item-a', metadata });
        await reserveUniqueKeyAndCreate(wrap(store), reservation('item-b'), created(2));
        expect((await store.readStream(uniqueKeyStream('k'))).map((event) => [event.type, event.data.owner])).to.deep.equal([
          ['UniqueKeyReserved', 'item-a'],
          ['UniqueKeyReleased', 'item-a'],
          ['UniqueKeyReserved', 'item-b'],
        ]);
        expect((await store.readStream('item-b')).map((event) => event.data.n)).to.deep.equal([2]);
      });

      it('given 30 owners racing for one key, when they create at once, then exactly one owner stream exists', async () => {
        const store = new MemoryEventStore();
        const outcomes = await Promise.allSettled(Array.from({ length: 30 }, (_, n) => reserveUniqueKeyAndCreate(wrap(store), reservation(`item-${n}`), created(n))));
        expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).to.have.length(1);
        const owners = new Set((await store.readAll()).map((event) => event.streamId).filter((stream) => stream.startsWith('item-')));
        expect(owners.size).to.equal(1);
      });
    });
  }
});

describe('unique key decider', () => {
  const given = deciderSpecification(uniqueKeyDecider);
  const AT = '2026-01-01T00:00:00.000Z';
  const LATER = '2026-01-01T00:05:00.000Z';
  const reserved = (owner: string, at = AT): UniqueKeyEvent => ({ type: 'UniqueKeyReserved', data: { key: 'k', owner, at } });
  const released = (owner: string, at = AT): UniqueKeyEvent => ({ type: 'UniqueKeyReleased', data: { key: 'k', owner, at } });
  const reserve = (owner: string, orphanOwner: string | null = null) =>
    ({ kind: 'reserve', key: 'k', owner, at: LATER, orphanOwner, conflictDetail: 'Group name already exists' }) as const;
  const release = (owner: string) => ({ kind: 'release', key: 'k', owner, at: LATER }) as const;

  it('given a key never used or released, when reserved, then UniqueKeyReserved names the owner', () => {
    given().when(reserve('item-a')).then([reserved('item-a', LATER)]);
    given(reserved('item-a'), released('item-a')).when(reserve('item-b')).then([reserved('item-b', LATER)]);
  });

  it('given a key held by the same owner, when reserved again (a retried create), then nothing is recorded', () => {
    given(reserved('item-a')).when(reserve('item-a')).then([]);
  });

  it('given a key held by another owner, when reserved, then 409 with the command\'s detail', () => {
    given(reserved('item-a')).when(reserve('item-b')).thenFails(409, 'Group name already exists');
  });

  it('given a key held by an orphan, when the very orphan inspected is taken over, then reserved; an owner reserved since is not', () => {
    given(reserved('item-a')).when(reserve('item-b', 'item-a')).then([reserved('item-b', LATER)]);
    given(reserved('item-a'), released('item-a'), reserved('item-c')).when(reserve('item-b', 'item-a')).thenFails(409, 'Group name already exists');
  });

  it('given a key held by its owner, when released by it, then UniqueKeyReleased; by anyone else or when free, nothing', () => {
    given(reserved('item-a')).when(release('item-a')).then([released('item-a', LATER)]);
    given(reserved('item-a')).when(release('item-b')).then([]);
    given().when(release('item-a')).then([]);
    given(reserved('item-a'), released('item-a')).when(release('item-a')).then([]);
  });

  it('given events, when folded, then a reservation holds the owner and its time and a release frees both', () => {
    const fold = (...events: UniqueKeyEvent[]) => events.reduce(uniqueKeyDecider.evolve, uniqueKeyDecider.initialState());
    expect(fold()).to.deep.equal({ owner: null, reservedAt: null });
    expect(fold(reserved('item-a'))).to.deep.equal({ owner: 'item-a', reservedAt: AT });
    expect(fold(reserved('item-a'), released('item-a'))).to.deep.equal({ owner: null, reservedAt: null });
    expect(fold(reserved('item-a'), released('item-a'), reserved('item-b', LATER))).to.deep.equal({ owner: 'item-b', reservedAt: LATER });
  });
});
