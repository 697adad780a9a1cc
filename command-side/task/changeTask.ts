import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import { resolveItemType } from '../../shared/item-types/itemTypes.ts';
import { handleCommand, inSequence, lruStateCache, SPEC_RETRY, type StateCache } from '../kernel/handleCommand.ts';
import { itemDecider } from '../catalog/decide.ts';
import { itemStream, type ItemState } from '../catalog/item.ts';
import type { EventStore } from '../../shared/event-store/EventStore.ts';

/**
 * Task state and runtime fields change through the item's own stream (ItemUpdated), so the task's
 * history shows every transition. Runtime fields are not versioned; definition fields are.
 */
/**
 * Tasks that run often have long streams: their folded state is kept between changes (and claims,
 * which fold the same item events), so a command reads only the events appended since. Per event
 * store: two services in one process (tests, a restart) must not share folded state.
 */
const taskStates = new WeakMap<EventStore, StateCache<ItemState>>();
export const taskStatesOf = (eventStore: EventStore): StateCache<ItemState> => {
  let cache = taskStates.get(eventStore);
  if (!cache) {
    cache = lruStateCache<ItemState>(10_000);
    taskStates.set(eventStore, cache);
  }
  return cache;
};

const steps = inSequence(itemDecider);

/** One change, or several consecutive transitions written in one commit (each its own event). */
export const changeTask = async (
  eventStore: EventStore,
  taskLaui: Laui,
  changes: Record<string, unknown> | ReadonlyArray<Record<string, unknown>>,
  metadata: EventMetadata,
  onlyIfStateIn?: ReadonlyArray<string>,
): Promise<Position | null> => {
  const versionedFields = resolveItemType('task')?.versionedFields ?? [];
  const commands = (Array.isArray(changes) ? changes : [changes]).map((change: Record<string, unknown>) => ({
    kind: 'update' as const,
    laui: taskLaui,
    changes: change,
    versionedFields,
    expectedVersion: null,
    access: null,
    revisionLaui: newLaui(new Date(metadata.at)),
    onlyIfStateIn,
  }));
  const result = await handleCommand(eventStore, itemStream(taskLaui), steps, commands, metadata, SPEC_RETRY, taskStatesOf(eventStore));
  return result.position;
};
