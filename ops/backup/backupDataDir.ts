import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { copyFile, link, mkdir, mkdtemp, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { PUBLISH_CHECKPOINT_FILE } from '../bus/kafka/publishCheckpointFile.ts';
import { logFileHead } from '../event-store/sqlite/compactLog.ts';
import { BACKUP_FORMAT, BACKUP_FORMAT_VERSION, EVENT_LOG, type BackupManifest, type ManifestFile } from './backupManifest.ts';
import { heldBackCheckpoint, leftOut, type SelectionOptions } from './backupSelection.ts';
import { removeOnSignal } from './removeOnSignal.ts';

export interface BackupProgress {
  /** What is being done: copying the event log (SQLite pages) or packing the files (bytes). */
  phase: 'log' | 'pack';
  done: number;
  total: number;
}

export interface BackupOptions {
  dataDir: string;
  out: string;
  /** Replace an existing `out` (else refused). */
  force?: boolean;
  /** Include LOG_DIR when it lies inside DATA_DIR (left out by default: large, and not needed to serve the items). */
  withLogs?: boolean;
  /** LOG_DIR (default DATA_DIR/logs). */
  logDir?: string;
  serviceVersion: string;
  onProgress?: (progress: BackupProgress) => void;
  now?: () => Date;
}

const toPosix = (path: string): string => path.split(sep).join('/');

/** `path` relative to DATA_DIR, or null when it lies outside (or is DATA_DIR itself). */
const inside = (dataDir: string, path: string): string | null => {
  const rel = relative(dataDir, path);
  return rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel) ? null : toPosix(rel);
};

const filesUnder = async (root: string, dir: string, selection: SelectionOptions): Promise<string[]> => {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (leftOut(toPosix(relative(root, path)), selection) !== null) continue;
    // Symbolic links are not followed: a link in DATA_DIR must not pull another file into a backup.
    if (entry.isSymbolicLink()) continue;
    if (entry.isDirectory()) found.push(...(await filesUnder(root, path, selection)));
    else if (entry.isFile()) found.push(path);
  }
  return found;
};

const sha256Of = async (path: string): Promise<string> => {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
};

/**
 * The event log copied with SQLite's online backup API, from a connection of its own: a consistent
 * copy of the log as of one moment, while the service goes on writing. SQLite starts a backup again
 * when another connection writes between two steps, so under a write load the steps would never
 * end: the first restart makes the rest one step (a read transaction in WAL mode blocks no writer).
 */
const copyEventLog = async (source: string, target: string, onProgress?: (progress: BackupProgress) => void): Promise<void> => {
  const db = new Database(source, { readonly: true, fileMustExist: true });
  try {
    let previous = Number.POSITIVE_INFINITY;
    let allAtOnce = false;
    const copied = await db.backup(target, {
      progress: ({ totalPages, remainingPages }) => {
        if (remainingPages > previous) allAtOnce = true;
        previous = remainingPages;
        onProgress?.({ phase: 'log', done: totalPages - remainingPages, total: totalPages });
        return allAtOnce ? 0x7fffffff : Math.max(256, Math.ceil(totalPages / 20));
      },
    });
    // The callback runs before each step: the last step's end is told here.
    onProgress?.({ phase: 'log', done: copied.totalPages, total: copied.totalPages });
  } finally {
    db.close();
  }
  const copy = new Database(target);
  try {
    // One file: the copy is complete without a -wal beside it.
    copy.pragma('journal_mode = DELETE');
  } finally {
    copy.close();
  }
};

const headOf = (log: string): number => {
  const db = new Database(log, { readonly: true, fileMustExist: true });
  try {
    return logFileHead(db);
  } finally {
    db.close();
  }
};

/** A copy of a file of DATA_DIR, or false when it went away meanwhile (the service removed it). */
const copyIfThere = async (original: string, copy: string): Promise<boolean> => {
  try {
    await copyFile(original, copy);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
};

/**
 * The finished file to `out`. Without `force` a hard link, which fails if `out` appeared while the
 * backup ran (the check at the start is not enough); a filesystem without hard links gets the check
 * and a rename.
 */
const moveInPlace = async (partial: string, out: string, force: boolean): Promise<void> => {
  if (!force) {
    try {
      await link(partial, out);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') throw new Error(`${out} exists: give --force to replace it`, { cause: error });
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw error;
      if (existsSync(out)) throw new Error(`${out} exists: give --force to replace it`, { cause: error });
    }
  }
  await rename(partial, out);
};

/**
 * `cli backup --out FILE`: DATA_DIR as one gzipped tar (a manifest first, then the event log and
 * the other files backupSelection.ts keeps: the keys, the publisher's checkpoint), built in a work
 * folder of mode 0700 beside `out` and moved into place, so `out` appears whole or not at all. Works
 * while the service runs and writes (copyEventLog). Everything but the log is copied after the log:
 * what can be newer than the log's copy is either left out (snapshots) or held back (checkpoint).
 */
export const backupDataDir = async (options: BackupOptions): Promise<BackupManifest> => {
  const dataDir = resolve(options.dataDir);
  const out = resolve(options.out);
  if (!existsSync(join(dataDir, EVENT_LOG))) throw new Error(`${dataDir} holds no event log (${EVENT_LOG}): not a DATA_DIR of the service`);
  // Inside DATA_DIR, a backup would be packed into the next one (and its work folder into itself).
  if (inside(dataDir, out) !== null) throw new Error(`${out} is inside DATA_DIR (${dataDir}): write the backup elsewhere`);
  if (!existsSync(dirname(out))) throw new Error(`${dirname(out)} does not exist: make the folder of --out first`);
  if (!options.force && existsSync(out)) throw new Error(`${out} exists: give --force to replace it`);
  const work = await mkdtemp(join(dirname(out), '.backup-'));
  const stopWatching = removeOnSignal([work]);
  try {
    const log = join(work, EVENT_LOG);
    await copyEventLog(join(dataDir, EVENT_LOG), log, options.onProgress);
    const head = headOf(log);
    // Every other file is copied first, then hashed and packed from the copy: what is packed is
    // exactly what was hashed, even for a file the service appends to meanwhile (logs).
    const entries: Array<{ source: string; file: ManifestFile }> = [{ source: log, file: { path: EVENT_LOG, size: (await stat(log)).size, sha256: await sha256Of(log) } }];
    const selection = { withLogs: options.withLogs === true, logs: inside(dataDir, resolve(options.logDir ?? join(dataDir, 'logs'))) };
    for (const original of await filesUnder(dataDir, dataDir, selection)) {
      const path = toPosix(relative(dataDir, original));
      const copy = join(work, 'files', path);
      await mkdir(dirname(copy), { recursive: true, mode: 0o700 });
      if (!(await copyIfThere(original, copy))) continue;
      if (path === PUBLISH_CHECKPOINT_FILE) await writeFile(copy, heldBackCheckpoint(await readFile(copy, 'utf8'), head));
      entries.push({ source: copy, file: { path, size: (await stat(copy)).size, sha256: await sha256Of(copy) } });
    }
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      version: BACKUP_FORMAT_VERSION,
      service_version: options.serviceVersion,
      created_at: (options.now?.() ?? new Date()).toISOString(),
      log_head_position: head,
      files: entries.map((entry) => entry.file),
    };
    const total = entries.reduce((sum, entry) => sum + entry.file.size, 0);
    let done = 0;
    const partial = join(work, 'backup.partial');
    const pack = tar.pack();
    // The file is made 0600 from its first byte (never chmod'ed after): it holds the keys.
    const written = pipeline(pack, createGzip({ level: 6 }), createWriteStream(partial, { mode: 0o600, flags: 'wx' }));
    const manifestText = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
    pack.entry({ name: 'manifest.json', size: manifestText.length, mode: 0o600 }, manifestText);
    for (const entry of entries) {
      await new Promise<void>((resolve, reject) => {
        const sink = pack.entry({ name: `data/${entry.file.path}`, size: entry.file.size, mode: 0o600 }, (error) => (error ? reject(error) : resolve()));
        const reader = createReadStream(entry.source);
        reader.on('data', (chunk) => {
          done += (chunk as Buffer).length;
          options.onProgress?.({ phase: 'pack', done, total });
        });
        reader.on('error', reject);
        reader.pipe(sink);
      });
    }
    pack.finalize();
    await written;
    await moveInPlace(partial, out, options.force === true);
    return manifest;
  } finally {
    await rm(work, { recursive: true, force: true });
    stopWatching();
  }
};
