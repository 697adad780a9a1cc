import { expect } from 'chai';
import { CommittedTail, type StoredEvent } from './CommittedTail.ts';

const stored = (position: number): StoredEvent => ({
  position: BigInt(position),
  streamId: 's',
  revision: position,
  id: `id-${position}`,
  type: 'T',
  data: '{}',
  metadata: '{}',
  recordedAt: '2026-01-01T00:00:00.000Z',
});
const positionsOf = (events: StoredEvent[] | undefined): number[] | undefined => events?.map((event) => Number(event.position));

describe('CommittedTail', () => {
  it('given consecutive events, when read after a position inside them, then it answers from that position, up to the count', () => {
    const tail = new CommittedTail();
    for (const position of [5, 6, 7, 8]) tail.add(stored(position));
    expect(positionsOf(tail.after(5n, 10))).to.deep.equal([6, 7, 8]);
    expect(positionsOf(tail.after(4n, 2))).to.deep.equal([5, 6]);
  });

  it('given events held, when read before them or at their end, then it cannot tell (SQLite answers)', () => {
    const tail = new CommittedTail();
    for (const position of [5, 6]) tail.add(stored(position));
    expect(tail.after(3n, 10), 'position 4 may be anyone\'s').to.equal(undefined);
    expect(tail.after(6n, 10), 'another process may have written after 6').to.equal(undefined);
    expect(new CommittedTail().after(0n, 10)).to.equal(undefined);
  });

  it('given a gap (another writer\'s events in between), when an event follows it, then only the new run is held', () => {
    const tail = new CommittedTail();
    for (const position of [1, 2, 3, 7, 8]) tail.add(stored(position));
    expect(tail.after(2n, 10)).to.equal(undefined);
    expect(positionsOf(tail.after(6n, 10))).to.deep.equal([7, 8]);
  });

  it('given more events than its capacity, when read, then only the newest are held and still answered in order', () => {
    const tail = new CommittedTail(3);
    for (let position = 1; position <= 10; position += 1) tail.add(stored(position));
    expect(tail.after(6n, 10)).to.equal(undefined);
    expect(positionsOf(tail.after(7n, 10))).to.deep.equal([8, 9, 10]);
  });
});
