import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import { logFileHead } from '../event-store/sqlite/compactLog.ts';
import { EVENT_LOG, parseManifest, type BackupManifest } from './backupManifest.ts';
import { removeOnSignal } from './removeOnSignal.ts';

export interface RestoreProgress {
  /** Bytes of the backup file read so far, of its size. */
  done: number;
  total: number;
}

export interface RestoreOptions {
  from: string;
  dataDir: string;
  onProgress?: (progress: RestoreProgress) => void;
}

/** What is in `dataDir` besides `own` (a restore's own work folder), or null when it does not exist. */
const entriesOf = async (dataDir: string, own?: string): Promise<string[] | null> => {
  try {
    if (!(await stat(dataDir)).isDirectory()) throw new Error(`${dataDir} exists and is not a directory`);
    return (await readdir(dataDir)).filter((name) => name !== own);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
};

const refuseUnlessEmpty = (dataDir: string, entries: string[] | null): void => {
  if (entries === null || entries.length === 0) return;
  const named = entries.slice(0, 5).join(', ') + (entries.length > 5 ? ', ...' : '');
  throw new Error(`${dataDir} is not empty (${named}): a restore fills an empty DATA_DIR only, never over a service's data`);
};

/**
 * The backup file unpacked into `staging`, every entry checked against the manifest: the manifest
 * first, only the files it lists, each once, each of its size and SHA-256, none missing. Throws on
 * the first problem (what was unpacked stays in `staging`, which the caller removes).
 */
const unpackChecked = async (from: string, staging: string, onProgress?: (progress: RestoreProgress) => void): Promise<BackupManifest> => {
  const total = (await stat(from)).size;
  let read = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      read += chunk.length;
      onProgress?.({ done: read, total });
      done(null, chunk);
    },
  });
  let manifest: BackupManifest | null = null;
  const written = new Map<string, { size: number; sha256: string }>();
  const extract = tar.extract();
  // A refused entry ends the whole extraction: the pipeline rejects with the reason.
  const fail = (error: Error) => {
    extract.destroy(error);
  };
  extract.on('entry', (header, stream, next) => {
    // The extraction's end destroys the entry being read with the same error, which the pipeline
    // reports already: unheard here it would be thrown again, uncaught.
    stream.on('error', () => undefined);
    if (header.name === 'manifest.json') {
      if (manifest !== null) return fail(new Error('a damaged backup: it holds two manifests'));
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
      stream.on('end', () => {
        try {
          manifest = parseManifest(Buffer.concat(chunks).toString('utf8'));
        } catch (error) {
          return fail(error as Error);
        }
        next();
      });
      return;
    }
    if (manifest === null) return fail(new Error('not a backup of this service: it does not start with its manifest'));
    const path = header.name.startsWith('data/') ? header.name.slice('data/'.length) : null;
    const listed = path === null ? undefined : manifest.files.find((file) => file.path === path);
    if (header.type !== 'file' || path === null || listed === undefined) return fail(new Error(`a damaged backup: ${header.name} is not in its manifest`));
    if (written.has(path)) return fail(new Error(`a damaged backup: ${path} appears twice`));
    if (header.size !== listed.size) return fail(new Error(`a damaged backup: ${path} is not of the size its manifest gives`));
    const target = join(staging, ...path.split('/'));
    const hash = createHash('sha256');
    let size = 0;
    // Hashed as it is written, in the same pipeline: nothing flows before the file is open.
    const hashing = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
    pipeline(stream, hashing, createWriteStream(target, { mode: 0o600, flags: 'wx' })).then(() => {
      written.set(path, { size, sha256: hash.digest('hex') });
      next();
    }, fail);
  });
  try {
    await pipeline(createReadStream(from), counted, createGunzip(), extract);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(/backup/.test(message) ? message : `a damaged backup (${message})`, { cause: error });
  }
  const checked = manifest as BackupManifest | null;
  if (checked === null) throw new Error('not a backup of this service: it holds no manifest');
  for (const file of checked.files) {
    const got = written.get(file.path);
    if (got === undefined) throw new Error(`a damaged backup: ${file.path} is missing`);
    if (got.size !== file.size || got.sha256 !== file.sha256) throw new Error(`a damaged backup: ${file.path} does not match its checksum`);
  }
  checkEventLog(join(staging, EVENT_LOG), checked.log_head_position);
  return checked;
};

/** The unpacked log is an event log whose newest position is the manifest's: what a service will open. */
const checkEventLog = (file: string, head: number): void => {
  let found: number;
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      found = logFileHead(db);
    } finally {
      db.close();
    }
  } catch (error) {
    throw new Error(`a damaged backup: its ${EVENT_LOG} is not an event log (${error instanceof Error ? error.message : String(error)})`, { cause: error });
  }
  if (found !== head) throw new Error(`a damaged backup: its event log ends at position ${found}, its manifest says ${head}`);
};

/**
 * `cli restore --from FILE`: a backup into an empty (or absent) DATA_DIR, never over anything. The
 * file is unpacked into a work folder and checked whole (unpackChecked) before anything is put in
 * place, so a damaged, truncated or foreign file leaves DATA_DIR as it was. Modes as the service
 * makes them: DATA_DIR and its folders 0700, files 0600.
 *
 * An absent DATA_DIR: the work folder is made beside it and renamed to it, one step. An existing
 * empty one is kept (a mounted volume, as in the image's /data, can be neither removed nor renamed
 * over, and its owner and mode were chosen by whoever made it): the work folder is made inside it,
 * and once checked, its entries are moved up one by one (renames in one filesystem), the event log
 * last: an interruption between two moves leaves keys without a log, never a log without its keys
 * (a service started on that would make new keys, and the sealed secrets would not open).
 */
export const restoreDataDir = async (options: RestoreOptions): Promise<BackupManifest> => {
  const dataDir = resolve(options.dataDir);
  const existing = await entriesOf(dataDir);
  refuseUnlessEmpty(dataDir, existing);
  if (existing === null) await mkdir(dirname(dataDir), { recursive: true });
  const staging = existing === null ? await mkdtemp(join(dirname(dataDir), `.${basename(dataDir)}.restore-`)) : await mkdtemp(join(dataDir, '.restore-'));
  const stopWatching = removeOnSignal([staging]);
  try {
    const manifest = await unpackChecked(options.from, staging, options.onProgress);
    // Checked again before anything moves: another restore or a starting service may have filled it meanwhile.
    const late = await entriesOf(dataDir, basename(staging));
    refuseUnlessEmpty(dataDir, late);
    if (existing === null) {
      await chmod(staging, 0o700);
      if (late !== null) await rmdir(dataDir);
      await rename(staging, dataDir);
    } else {
      await chmod(dataDir, 0o700);
      const names = (await readdir(staging)).sort((a, b) => Number(a === EVENT_LOG) - Number(b === EVENT_LOG));
      for (const name of names) await rename(join(staging, name), join(dataDir, name));
      await rmdir(staging);
    }
    return manifest;
  } finally {
    await rm(staging, { recursive: true, force: true });
    stopWatching();
  }
};
