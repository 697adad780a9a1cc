import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deserialize, serialize } from 'node:v8';
import type { Position } from '../../shared/event-store/EventStore.ts';
import type { Doc } from '../../shared/read-store/ReadStore.ts';
import { CHECKPOINTS } from '../../projections/runner/checkpoints.ts';

/**
 * Snapshots of the embedded read models in DATA_DIR/snapshots, so that a start loads the newest one
 * and replays only the events after it (issue 35: restarts in constant time at any history length).
 *
 * A file: `ORCHSNAP`, then frames `[kind u8][length u32][bytes]`: a JSON header (format, the read
 * models' version, the runner, the position), per collection its name then chunks of documents
 * (v8 serialization, the structured clone of what the store holds), and last the SHA-256 of every
 * byte before it. Written to a temporary file, fsync'ed, renamed, the folder fsync'ed: a snapshot
 * is whole or absent. A damaged file (digest), another format, or read models of other code (their
 * version) is ignored, said in the log, and the start replays the log as before.
 */
const MAGIC = Buffer.from('ORCHSNAP');
const HEADER = 1;
const COLLECTION = 2;
const DOCS = 3;
const TRAILER = 9;
/** Raised when the file layout changes: an older file is ignored and rebuilt. */
export const SNAPSHOT_FORMAT = 1;
const CHUNK = 5_000;
const NAME = /^readmodels-(\d+)\.snap$/;

export const snapshotFolder = (dataDir: string): string => join(dataDir, 'snapshots');

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

const sourcesUnder = async (dir: string): Promise<string[]> => {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await sourcesUnder(path)));
    else if (entry.name.endsWith('.ts') && !entry.name.includes('.spec.')) found.push(path);
  }
  return found;
};

/**
 * What the read models were folded by: a digest of the projections' code and the shared code they
 * use (event shapes, upcasters, item rules). A snapshot of other code is not trusted: a changed
 * projection would keep serving documents the new code would never have made.
 */
export const readModelVersion = async (): Promise<string> => {
  const files = (await Promise.all(['projections', 'shared'].map((folder) => sourcesUnder(join(ROOT, folder))))).flat().sort();
  const hash = createHash('sha256').update(`format ${SNAPSHOT_FORMAT}\0`);
  for (const file of files) hash.update(relative(ROOT, file).split(sep).join('/')).update('\0').update(await readFile(file)).update('\0');
  return hash.digest('hex');
};

export interface SnapshotHeader {
  format: number;
  version: string;
  runner: string;
  /** The runner's position when the documents were captured (a decimal: positions are bigints). */
  position: string;
  created_at: string;
  collections: number;
  documents: number;
}

const frame = (kind: number, body: Buffer): Buffer => {
  const head = Buffer.alloc(5);
  head.writeUInt8(kind, 0);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
};

const pause = (): Promise<void> => new Promise((done) => setImmediate(done));

/**
 * Writes the captured documents with the runner's checkpoint at `position` (whatever checkpoint the
 * capture held): a start resumes exactly after it. Serialized in chunks with a turn of the event
 * loop between them, so requests are served meanwhile. Older snapshots are removed once it is in place.
 */
export const writeSnapshot = async (options: {
  dir: string;
  version: string;
  runner: string;
  position: Position;
  collections: ReadonlyMap<string, ReadonlyArray<Doc>>;
  now?: Date;
}): Promise<{ file: string; bytes: number; documents: number }> => {
  await mkdir(options.dir, { recursive: true, mode: 0o700 });
  const file = join(options.dir, `readmodels-${options.position.toString().padStart(20, '0')}.snap`);
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
  const collections = new Map(options.collections);
  collections.set(CHECKPOINTS, [{ id: options.runner, position: options.position.toString() }]);
  const documents = [...collections.values()].reduce((sum, docs) => sum + docs.length, 0);
  const header: SnapshotHeader = {
    format: SNAPSHOT_FORMAT,
    version: options.version,
    runner: options.runner,
    position: options.position.toString(),
    created_at: (options.now ?? new Date()).toISOString(),
    collections: collections.size,
    documents,
  };
  const handle = await open(temporary, 'wx', 0o600);
  const hash = createHash('sha256');
  let bytes = 0;
  const write = async (buffer: Buffer) => {
    hash.update(buffer);
    bytes += buffer.length;
    await handle.write(buffer);
  };
  try {
    await write(MAGIC);
    await write(frame(HEADER, Buffer.from(JSON.stringify(header))));
    for (const [name, docs] of collections) {
      await write(frame(COLLECTION, Buffer.from(name)));
      for (let start = 0; start < docs.length; start += CHUNK) {
        await write(frame(DOCS, serialize(docs.slice(start, start + CHUNK))));
        await pause();
      }
    }
    const digest = Buffer.from(hash.digest('hex'));
    await handle.write(frame(TRAILER, digest));
    bytes += digest.length + 5;
    await handle.sync();
  } catch (error) {
    await handle.close();
    await rm(temporary, { force: true });
    throw error;
  }
  await handle.close();
  await rename(temporary, file);
  const folder = await open(options.dir, 'r');
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
  for (const name of await readdir(options.dir)) {
    if (name !== `readmodels-${options.position.toString().padStart(20, '0')}.snap` && (NAME.test(name) || name.endsWith('.tmp'))) await rm(join(options.dir, name), { force: true });
  }
  return { file, bytes, documents };
};

/** Reads a snapshot's frames in order, checking the digest at the end; throws on anything wrong. */
async function* framesOf(file: string): AsyncGenerator<{ kind: number; body: Buffer }> {
  const hash = createHash('sha256');
  let pending: Buffer = Buffer.alloc(0);
  let magicSeen = false;
  let ended = false;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
    pending = pending.length === 0 ? (chunk as Buffer) : Buffer.concat([pending, chunk as Buffer]);
    if (!magicSeen) {
      if (pending.length < MAGIC.length) continue;
      if (!pending.subarray(0, MAGIC.length).equals(MAGIC)) throw new Error('not a read-model snapshot');
      hash.update(pending.subarray(0, MAGIC.length));
      pending = pending.subarray(MAGIC.length);
      magicSeen = true;
    }
    while (pending.length >= 5) {
      const kind = pending.readUInt8(0);
      const length = pending.readUInt32BE(1);
      if (pending.length < 5 + length) break;
      const whole = pending.subarray(0, 5 + length);
      const body = Buffer.from(pending.subarray(5, 5 + length));
      pending = pending.subarray(5 + length);
      if (kind === TRAILER) {
        if (body.toString() !== hash.digest('hex')) throw new Error('its digest does not match: the file is damaged');
        ended = true;
        continue;
      }
      if (ended) throw new Error('data after its digest');
      hash.update(whole);
      yield { kind, body };
    }
  }
  if (!ended || pending.length > 0) throw new Error('it ends before its digest: the file is cut');
}

export interface LoadedSnapshot {
  file: string;
  position: Position;
  documents: number;
}

/**
 * Loads the newest usable snapshot into `restore` (the memory read store), or returns null and why
 * each candidate was passed over (`skipped`, for the log). On a file found bad midway, `clear` empties
 * what was loaded before the next candidate: nothing of a damaged snapshot is ever served.
 */
export const loadLatestSnapshot = async (options: {
  dir: string;
  version: string;
  runner: string;
  /** The log's last position: a snapshot past it (a DATA_DIR copied by hand, a log restored older) is not the log's. */
  head: Position;
  restore(collection: string, docs: ReadonlyArray<Doc>): Promise<void>;
  clear(): Promise<void>;
  skipped(file: string, reason: string): void;
}): Promise<LoadedSnapshot | null> => {
  let names: string[];
  try {
    names = (await readdir(options.dir)).filter((name) => NAME.test(name)).sort().reverse();
  } catch {
    return null;
  }
  for (const name of names) {
    const file = join(options.dir, name);
    let header: SnapshotHeader | null = null;
    let loadedAny = false;
    try {
      let collection: string | null = null;
      let documents = 0;
      for await (const { kind, body } of framesOf(file)) {
        if (kind === HEADER) {
          header = JSON.parse(body.toString()) as SnapshotHeader;
          if (header.format !== SNAPSHOT_FORMAT) throw new Error(`format ${String(header.format)}, this version reads ${SNAPSHOT_FORMAT}`);
          if (header.version !== options.version) throw new Error('made by other read-model code (a changed projection): rebuilt from the log');
          if (header.runner !== options.runner) throw new Error(`made for read models "${header.runner}", not "${options.runner}"`);
          if (BigInt(header.position) > options.head) throw new Error(`its position ${header.position} is past the log's end (${String(options.head)}): not made from this log`);
        } else if (header === null) {
          throw new Error('no header');
        } else if (kind === COLLECTION) {
          collection = body.toString();
        } else if (kind === DOCS && collection !== null) {
          const docs = deserialize(body) as Doc[];
          loadedAny = true;
          await options.restore(collection, docs);
          documents += docs.length;
        } else {
          throw new Error(`an unknown frame (${kind})`);
        }
      }
      if (header === null) throw new Error('no header');
      return { file, position: BigInt(header.position), documents };
    } catch (error) {
      if (loadedAny) await options.clear();
      options.skipped(file, error instanceof Error ? error.message : String(error));
    }
  }
  return null;
};
