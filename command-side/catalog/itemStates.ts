import type { EventStore } from '../../shared/event-store/EventStore.ts';
import { lruStateCache, type StateCache } from '../kernel/handleCommand.ts';
import type { ItemState } from './item.ts';

/**
 * Folded states of item streams that change often (tasks: every run writes a handful of changes,
 * and claims fold the same events), kept between commands so that a command decides on them without
 * reading the stream (handleCommand). Per event store: two services in one process (tests, a
 * restart) must not share folded state. A task's creation puts its first state here, so its first
 * run reads nothing either.
 */
const itemStates = new WeakMap<EventStore, StateCache<ItemState>>();

export const itemStatesOf = (eventStore: EventStore): StateCache<ItemState> => {
  let cache = itemStates.get(eventStore);
  if (!cache) {
    cache = lruStateCache<ItemState>(10_000);
    itemStates.set(eventStore, cache);
  }
  return cache;
};
