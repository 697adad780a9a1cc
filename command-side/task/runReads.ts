import type { Laui } from '../../shared/ids.ts';
import type { SystemSettings } from '../../shared/task/systemSettings.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { TaskDeps } from './taskDeps.ts';
import { loadSystemSettings } from '../../shared/task/loadSystemSettings.ts';

/**
 * Catalog reads a run makes that are the same for every run of a batch (the system settings, the
 * referenced operator, connection, workflow, payload, configs and actions): read once per batch, not
 * once per task. Items are peeked (the stored document, not a copy): a run only reads them.
 */
export interface RunReads {
  settings(): Promise<SystemSettings>;
  item(laui: Laui): Promise<ItemDoc | null>;
}

export const runReads = (deps: Pick<TaskDeps, 'items' | 'access' | 'logger'>, settings?: SystemSettings): RunReads => {
  let loaded: Promise<SystemSettings> | null = settings ? Promise.resolve(settings) : null;
  const items = new Map<Laui, Promise<ItemDoc | null>>();
  return {
    settings: () => (loaded ??= loadSystemSettings(deps)),
    item(laui) {
      let found = items.get(laui);
      if (!found) {
        found = deps.items.peek(laui);
        items.set(laui, found);
      }
      return found;
    },
  };
};
