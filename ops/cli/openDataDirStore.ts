import { accessSync, constants, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.ts';
import { openSqliteEventStore, type SqliteEventStore } from '../event-store/sqlite/SqliteEventStore.ts';

/** The event log's file in DATA_DIR (as ops/event-store/openEventStore.ts opens it). */
const EVENT_LOG = 'events.sqlite';

const who = (): string => `this user (uid ${process.getuid?.() ?? '?'})`;

const code = (error: unknown): string => (error as NodeJS.ErrnoException).code ?? String(error);

/**
 * Why the CLI cannot use `dataDir` as the service's DATA_DIR, or null when it can: it exists, is a
 * directory this user may read and write (SQLite writes its -wal and -shm files beside the log) and
 * holds the event log. The CLI never makes a DATA_DIR nor a log: a mistyped DATA_DIR (or the default
 * ./data of another working directory) would get a fresh, empty log that no service reads. Each
 * message names the path and the setting.
 */
export const dataDirProblem = (dataDir: string, setting: string | undefined): string | null => {
  const where = setting === undefined || setting.trim() === '' ? `DATA_DIR is not set: its default ./data is ${dataDir}` : `DATA_DIR=${dataDir}`;
  let isDirectory: boolean;
  try {
    isDirectory = statSync(dataDir).isDirectory();
  } catch (error) {
    if (code(error) === 'ENOENT') return `${where}, which does not exist: set DATA_DIR to the service's data directory`;
    return `${where}, which ${who()} cannot reach (${code(error)}): run the CLI as the service's user, or set DATA_DIR`;
  }
  if (!isDirectory) return `${where}, which is not a directory: set DATA_DIR to the service's data directory`;
  try {
    accessSync(dataDir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (error) {
    return `${where}, which ${who()} cannot read and write (${code(error)}): run the CLI as the service's user`;
  }
  const log = join(dataDir, EVENT_LOG);
  try {
    accessSync(log, constants.R_OK | constants.W_OK);
  } catch (error) {
    if (code(error) === 'ENOENT') return `${where}, which holds no event log (${EVENT_LOG}): set DATA_DIR to the data directory of the service (it makes the log at its first start)`;
    return `${where}: its event log ${log} cannot be read and written by ${who()} (${code(error)}): run the CLI as the service's user`;
  }
  return null;
};

/**
 * The service's event log in DATA_DIR, beside a running service or without one (WAL lets both
 * write; a running service notices new events by polling). Throws the problem with DATA_DIR first.
 */
export const openDataDirStore = (config: Pick<Config, 'dataDir' | 'sqliteSynchronous'>, setting: string | undefined = process.env.DATA_DIR): SqliteEventStore => {
  const problem = dataDirProblem(config.dataDir, setting);
  if (problem !== null) throw new Error(problem);
  // One command, one append (or reads only): a writer thread would only add its start-up.
  return openSqliteEventStore({ file: join(config.dataDir, EVENT_LOG), synchronous: config.sqliteSynchronous, writer: 'main-thread', pollIntervalMs: 200 });
};
