import { join } from 'node:path';
import type { EventStore } from '../../shared/event-store/EventStore.ts';
import type { Config } from '../config.ts';
import { secureEventLog } from '../secureDataDir.ts';
import { openSqliteEventStore } from './sqlite/SqliteEventStore.ts';

/**
 * The event store the configuration names: the SQLite file in DATA_DIR (embedded), or
 * KurrentDB/EventStoreDB at EVENTSTORE_URL (distributed). Either is ready to append when this
 * resolves: the SQLite writer thread has started, KurrentDB has answered a read of its head, so a
 * wrong address fails the start rather than the first command.
 */
export const openEventStore = async (config: Pick<Config, 'eventStore' | 'dataDir' | 'sqliteSynchronous'>): Promise<EventStore> => {
  if (config.eventStore.kind === 'kurrentdb') {
    // Imported here, not at the top: the KurrentDB client takes over a second to load, which an
    // embedded start (SQLite) would pay for nothing.
    const { openKurrentEventStore } = await import('./kurrentdb/KurrentEventStore.ts');
    return openKurrentEventStore({ connectionString: config.eventStore.connectionString });
  }
  const sqlite = openSqliteEventStore({ file: join(config.dataDir, 'events.sqlite'), synchronous: config.sqliteSynchronous });
  await sqlite.writerReady();
  secureEventLog(config.dataDir);
  return sqlite;
};
