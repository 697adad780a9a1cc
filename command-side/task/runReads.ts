import type { Laui } from '../../shared/ids.ts';
import type { SystemSettings } from '../../shared/task/systemSettings.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { loadSystemSettings, type TaskDeps } from './taskDeps.ts';

/**
 * Catalog reads a run makes that are the same for every run of a batch (the system settings, the
 * referenced operator, connection, workflow, payload, configs and actions): read once per batch, not
 * once per task. Items are peeked (the stored document, not a copy): a run only reads them.
 */
export interface RunReads {
  settings(): Promise<SystemSettings>;
  item(laui: Laui): Promise<ItemDoc | null>;
}

export const runReads = (deps: Pick<TaskDeps, 'items'>, settings?: SystemSettings): RunReads => {
  let loaded: Promise<SystemSettings> | null = settings ? Promise.resolve(settings) : null;
  const items = new Map<Laui, Promise<ItemDoc | null>>();
  return {
    settings: () => (loaded ??= loadSystemSettings(deps.items)),
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
