import type { Position } from '../../shared/event-store/EventStore.ts';
import { uniqueKeyOf } from '../../shared/item-types/primaryKey.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { itemHoldingKey } from '../catalog/keyHolder.ts';
import type { TaskDeps } from './taskDeps.ts';

const ATTEMPTS = 8;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The live task holding the unique key (name, project_laui, account_laui, partition) of a create
 * body, as the read model shows it once it has caught up with the holder; null when no live task
 * holds it. Found through the key's reservation, not by searching the read model: when two identical
 * POST /task/run race, the loser's 409 comes before the read model has the winner's task, and a
 * search then found nothing and answered the 409 (spec 4.2: the existing task's LAUI instead).
 */
export const taskHoldingKey = async (
  deps: Pick<TaskDeps, 'eventStore' | 'items'>,
  fields: Record<string, unknown>,
  settle: (position: Position | null) => Promise<void>,
): Promise<ItemDoc | null> => {
  const key = uniqueKeyOf('task', { partition: 'ALL', ...fields });
  if (key === null) return null;
  for (let attempt = 1; attempt <= ATTEMPTS; attempt += 1) {
    const holder = await itemHoldingKey(deps.eventStore, key);
    if (holder === null) return null;
    if (holder.state.status === 'live') {
      await settle(holder.position);
      const task = await deps.items.peek(holder.laui);
      return task && !task.is_deleted && task.item_type === 'task' ? task : null;
    }
    if (holder.state.status !== 'none') return null;
    // Reserved, its creation not appended yet (stores without multi-stream transactions).
    await sleep(10 * 2 ** attempt);
  }
  return null;
};
