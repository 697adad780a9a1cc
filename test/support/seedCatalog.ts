import { join } from 'node:path';
import { metadataFor, type EventToAppend } from '../../shared/events.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import { openSqliteEventStore } from '../../ops/event-store/sqlite/SqliteEventStore.ts';
import { itemCreatedEvent } from '../../command-side/catalog/itemCreatedEvent.ts';

export interface SeededFolder {
  account: Laui;
  project: Laui;
  folder: Laui;
}

/**
 * An account `scale`, its project `big` and a payload folder `many` with `count` payloads
 * (`p-00000`...), written straight into a fresh DATA_DIR's event log before the service starts
 * (as bench/catalogScaleBench.ts does): seconds for 10,000 items, where the API takes minutes on
 * a loaded machine. No access maps: administrators see them.
 */
export const seedLargeFolder = async (dataDir: string, count: number): Promise<SeededFolder> => {
  const store = openSqliteEventStore({ file: join(dataDir, 'events.sqlite'), synchronous: 'normal' });
  const metadata = metadataFor(null, new Date(), 'seed');
  const access = { owners: {}, editors: {}, viewers: {} };
  const created = (laui: Laui, itemType: string, name: string, parent: { laui: Laui; type: string } | null, fields: Record<string, unknown>): EventToAppend =>
    itemCreatedEvent({ laui, itemType, name, parent, fields, access, metadata });
  try {
    const account = newLaui();
    const project = newLaui();
    const folder = newLaui();
    await store.append(`item-${account}`, [created(account, 'folder.account', 'scale', null, {})], 'no_stream');
    await store.append(`item-${project}`, [created(project, 'folder.project', 'big', { laui: account, type: 'folder.account' }, {})], 'no_stream');
    await store.append(`item-${folder}`, [created(folder, 'folder.payload', 'many', { laui: project, type: 'folder.project' }, {})], 'no_stream');
    const pending: Array<Promise<unknown>> = [];
    for (let index = 0; index < count; index += 1) {
      const laui = newLaui();
      const name = `p-${String(index).padStart(5, '0')}`;
      pending.push(store.append(`item-${laui}`, [created(laui, 'payload', name, { laui: folder, type: 'folder.payload' }, { content: { n: index } })], 'no_stream'));
      if (pending.length >= 1000) await Promise.all(pending.splice(0));
    }
    await Promise.all(pending);
    return { account, project, folder };
  } finally {
    await store.close();
  }
};
