import Database from 'better-sqlite3';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { BACKUP_FORMAT, BACKUP_FORMAT_VERSION, EVENT_LOG, type BackupManifest, type ManifestFile } from './backupManifest.ts';

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
  /** Include DATA_DIR/logs (the run and API logs; left out by default: large, and not needed to serve the items). */
  withLogs?: boolean;
  serviceVersion: string;
  onProgress?: (progress: BackupProgress) => void;
  now?: () => Date;
}

/** Not copied file by file: the event log goes through SQLite's backup API; logs only when asked. */
const LOG_FILES = new Set([EVENT_LOG, `${EVENT_LOG}-wal`, `${EVENT_LOG}-shm`, `${EVENT_LOG}-journal`]);

const filesUnder = async (root: string, dir: string, withLogs: boolean): Promise<string[]> => {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const rel = relative(root, path);
    if (LOG_FILES.has(rel)) continue;
    if (!withLogs && (rel === 'logs' || rel.startsWith(`logs${sep}`))) continue;
    // Symbolic links are not followed: a link in DATA_DIR must not pull another file into a backup.
    if (entry.isSymbolicLink()) continue;
    if (entry.isDirectory()) found.push(...(await filesUnder(root, path, withLogs)));
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
    await db.backup(target, {
      progress: ({ totalPages, remainingPages }) => {
        if (remainingPages > previous) allAtOnce = true;
        previous = remainingPages;
        onProgress?.({ phase: 'log', done: totalPages - remainingPages, total: totalPages });
        return allAtOnce ? 0x7fffffff : Math.max(256, Math.ceil(totalPages / 20));
      },
    });
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
    const row = db.prepare('SELECT MAX(position) AS head FROM events').get() as { head: number | null } | undefined;
    return row?.head ?? 0;
  } finally {
    db.close();
  }
};

/**
 * `cli backup --out FILE`: DATA_DIR as one gzipped tar (a manifest first, then the event log and
 * every other file: the keys, settings files; the logs with `withLogs`), written to a temporary file
 * of mode 0600 beside `out` and renamed into place, so `out` appears whole or not at all. Works while
 * the service runs and writes (copyEventLog).
 */
export const backupDataDir = async (options: BackupOptions): Promise<BackupManifest> => {
  const { dataDir, out } = options;
  if (!existsSync(join(dataDir, EVENT_LOG))) throw new Error(`${dataDir} holds no event log (${EVENT_LOG}): not a DATA_DIR of the service`);
  if (!options.force && existsSync(out)) throw new Error(`${out} exists: give --force to replace it`);
  const work = await mkdtemp(join(dirname(out), '.backup-'));
  const partial = join(dirname(out), `.${randomBytes(6).toString('hex')}.backup-partial`);
  try {
    const log = join(work, EVENT_LOG);
    await copyEventLog(join(dataDir, EVENT_LOG), log, options.onProgress);
    // Every other file is copied first, then hashed and packed from the copy: what is packed is
    // exactly what was hashed, even for a file the service appends to meanwhile (logs).
    const entries: Array<{ source: string; file: ManifestFile }> = [{ source: log, file: { path: EVENT_LOG, size: (await stat(log)).size, sha256: await sha256Of(log) } }];
    for (const original of await filesUnder(dataDir, dataDir, options.withLogs === true)) {
      const path = relative(dataDir, original).split(sep).join('/');
      const copy = join(work, 'files', path);
      await mkdir(dirname(copy), { recursive: true, mode: 0o700 });
      await copyFile(original, copy);
      entries.push({ source: copy, file: { path, size: (await stat(copy)).size, sha256: await sha256Of(copy) } });
    }
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      version: BACKUP_FORMAT_VERSION,
      service_version: options.serviceVersion,
      created_at: (options.now?.() ?? new Date()).toISOString(),
      log_head_position: headOf(log),
      files: entries.map((entry) => entry.file),
    };
    const total = entries.reduce((sum, entry) => sum + entry.file.size, 0);
    let done = 0;
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
    await rename(partial, out);
    return manifest;
  } finally {
    await rm(work, { recursive: true, force: true });
    await rm(partial, { force: true });
  }
};
