import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import { parseManifest, type BackupManifest } from './backupManifest.ts';

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

/** Why `dataDir` cannot be restored into, or null: it must not exist, or be an empty directory. */
const targetProblem = async (dataDir: string): Promise<string | null> => {
  let entries: string[];
  try {
    if (!(await stat(dataDir)).isDirectory()) return `${dataDir} exists and is not a directory`;
    entries = await readdir(dataDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  return entries.length === 0 ? null : `${dataDir} is not empty (${entries.length} entries): a restore fills an empty DATA_DIR only, never over a service's data`;
};

/**
 * `cli restore --from FILE`: a backup into an empty (or absent) DATA_DIR. Everything is unpacked
 * into a folder beside it and checked against the manifest (every file's size and SHA-256, none
 * missing, none extra) before that folder is renamed into place: a damaged, truncated or foreign
 * file leaves DATA_DIR as it was. Modes as the service makes them: DATA_DIR and keys 0700, files 0600.
 */
export const restoreDataDir = async (options: RestoreOptions): Promise<BackupManifest> => {
  const dataDir = resolve(options.dataDir);
  const problem = await targetProblem(dataDir);
  if (problem !== null) throw new Error(problem);
  await mkdir(dirname(dataDir), { recursive: true });
  const staging = await mkdtemp(join(dirname(dataDir), `.${basename(dataDir)}.restore-`));
  try {
    const total = (await stat(options.from)).size;
    let read = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        read += chunk.length;
        options.onProgress?.({ done: read, total });
        done(null, chunk);
      },
    });
    let manifest: BackupManifest | null = null;
    const written = new Map<string, { size: number; sha256: string }>();
    const extract = tar.extract();
    extract.on('entry', (header, stream, next) => {
      const fail = (error: Error) => {
        stream.resume();
        next(error);
      };
      if (header.name === 'manifest.json') {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
        stream.on('end', () => {
          try {
            manifest = parseManifest(Buffer.concat(chunks).toString('utf8'));
            next();
          } catch (error) {
            next(error as Error);
          }
        });
        return;
      }
      if (manifest === null) return fail(new Error('not a backup of this service: it does not start with its manifest'));
      const path = header.name.startsWith('data/') ? header.name.slice('data/'.length) : null;
      const listed = path === null ? undefined : manifest.files.find((file) => file.path === path);
      if (header.type !== 'file' || path === null || listed === undefined) return fail(new Error(`a damaged backup: ${header.name} is not in its manifest`));
      if (written.has(path)) return fail(new Error(`a damaged backup: ${path} appears twice`));
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
      }, next);
    });
    try {
      await pipeline(createReadStream(options.from), counted, createGunzip(), extract);
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
    await chmod(staging, 0o700);
    // Checked again at the swap: another restore or a starting service may have filled it meanwhile.
    const late = await targetProblem(dataDir);
    if (late !== null) throw new Error(late);
    await rmdir(dataDir).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
    await rename(staging, dataDir);
    return checked;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
};
