import type { EventStore, Position } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import { loadState } from '../kernel/handleCommand.ts';
import { uniqueKeyDecider, uniqueKeyStream } from '../kernel/uniqueKey.ts';
import { itemDecider } from './decide.ts';
import { itemStream, type ItemState } from './item.ts';
import type { ItemEvent } from '../../shared/domain-events/itemEvents.ts';

const ITEM_STREAM_PREFIX = itemStream('');

export interface KeyHolder {
  laui: Laui;
  /** The holder as its stream holds it ('none' while its creation is not appended yet). */
  state: ItemState;
  /** Its stream's last event: what a reader of the read model waits for. Null while it has none. */
  position: Position | null;
}

/**
 * The item holding a unique-key reservation, read from the reservation and the item's own stream,
 * never from the read model: the loser of a concurrent create (409) learns the winner at once,
 * even before the read model has applied it. Null when the key is free (released meanwhile).
 */
export const itemHoldingKey = async (eventStore: EventStore, key: string): Promise<KeyHolder | null> => {
  const { owner } = await loadState(eventStore, uniqueKeyStream(key), uniqueKeyDecider);
  if (owner === null || !owner.startsWith(ITEM_STREAM_PREFIX)) return null;
  const recorded = await eventStore.readStream(owner);
  const state = recorded.reduce((folded, event) => itemDecider.evolve(folded, { type: event.type, data: event.data } as ItemEvent), itemDecider.initialState());
  return { laui: owner.slice(ITEM_STREAM_PREFIX.length), state, position: recorded.at(-1)?.position ?? null };
};
