import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import { resolveItemType } from '../../shared/item-types/itemTypes.ts';
import { handleCommand } from '../kernel/handleCommand.ts';
import { itemDecider } from '../catalog/decide.ts';
import { itemStream } from '../catalog/item.ts';
import type { EventStore } from '../../shared/event-store/EventStore.ts';

/**
 * Task state and runtime fields change through the item's own stream (ItemUpdated), so the task's
 * history shows every transition. Runtime fields are not versioned; definition fields are.
 */
export const changeTask = async (eventStore: EventStore, taskLaui: Laui, changes: Record<string, unknown>, metadata: EventMetadata): Promise<Position | null> => {
  const result = await handleCommand(
    eventStore,
    itemStream(taskLaui),
    itemDecider,
    {
      kind: 'update',
      laui: taskLaui,
      changes,
      versionedFields: resolveItemType('task')?.versionedFields ?? [],
      expectedVersion: null,
      access: null,
      revisionLaui: newLaui(new Date(metadata.at)),
    },
    metadata,
  );
  return result.position;
};
