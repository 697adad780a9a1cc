import { createHash } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crc32 } from 'node:zlib';
import type { Position } from '../../shared/event-store/EventStore.ts';
import type { Doc } from '../../shared/read-store/ReadStore.ts';
import { CHECKPOINTS } from '../../projections/runner/checkpoints.ts';
import type { PendingDocuments } from '../../projections/read-store/DocumentMap.ts';
import { decodeChunkHead, decodeDocuments, encodeChunk, type ChunkHead } from './snapshotChunk.ts';

/**
 * Snapshots of the embedded read models in DATA_DIR/snapshots, so that a start loads the newest one
 * and replays only the events after it (issue 35: restarts in constant time at any history length).
 *
 * A file: `ORCHSNAP`, then frames `[kind u8][length u32][bytes]`: a JSON header (format, the read
 * models' version, the runner, the position and the id of the event there), per collection its
 * name then chunks of documents (snapshotChunk.ts), and last the CRC-32 of every byte before it.
 * Written to a temporary file, fsync'ed, renamed, the folder fsync'ed: a snapshot is whole or
 * absent. A damaged file (its CRC), another format, read models of other code (their version) or
 * of another log (the event at its position) is ignored, said in the log, and the start replays
 * the log as before.
 */
const MAGIC = Buffer.from('ORCHSNAP');
const HEADER = 1;
const COLLECTION = 2;
const DOCS = 3;
const TRAILER = 9;
/**
 * Raised when the file layout changes: an older file is ignored and rebuilt. 2: chunks of JSON with
 * shared values (format 1: v8.serialize), a CRC-32 instead of a SHA-256, the event id of the position.
 * 3: the chunks' JSON in ASCII, read as latin1 (format 2's UTF-8 would be misread).
 * 4: each chunk's ids ahead of its documents (encodeChunk), which a load leaves undecoded.
 */
export const SNAPSHOT_FORMAT = 4;
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
  /** The id of the event at that position (null at the empty log's start): a log put back in another's place has others. */
  event_id: string | null;
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
  eventId: string | null;
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
    event_id: options.eventId,
    created_at: (options.now ?? new Date()).toISOString(),
    collections: collections.size,
    documents,
  };
  const handle = await open(temporary, 'wx', 0o600);
  let crc = 0;
  let bytes = 0;
  const write = async (buffer: Buffer) => {
    crc = crc32(buffer, crc);
    bytes += buffer.length;
    await handle.write(buffer);
  };
  try {
    await write(MAGIC);
    await write(frame(HEADER, Buffer.from(JSON.stringify(header))));
    for (const [name, docs] of collections) {
      await write(frame(COLLECTION, Buffer.from(name)));
      for (let start = 0; start < docs.length; start += CHUNK) {
        await write(frame(DOCS, encodeChunk(docs.slice(start, start + CHUNK))));
        await pause();
      }
    }
    const digest = Buffer.alloc(4);
    digest.writeUInt32BE(crc >>> 0);
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

/**
 * Reads a snapshot's frames in order, checking the CRC at the end; throws on anything wrong. Read
 * straight into one buffer of a few megabytes (a frame larger than it gets one of its size), so
 * that no frame is copied piece by piece. A frame's bytes stay valid after the next (a full buffer
 * is left as it is for a new one): the documents of a chunk are decoded from them later.
 */
async function* framesOf(file: string): AsyncGenerator<{ kind: number; body: Buffer }> {
  const handle = await open(file, 'r');
  try {
    const reader = new FrameReader(handle);
    const magic = await reader.take(MAGIC.length);
    if (magic === null || !magic.equals(MAGIC)) throw new Error('not a read-model snapshot');
    let crc = crc32(magic);
    for (;;) {
      const head = await reader.take(5);
      if (head === null) throw new Error('it ends before its CRC: the file is cut');
      const kind = head.readUInt8(0);
      const body = await reader.take(head.readUInt32BE(1));
      if (body === null) throw new Error('it ends within a frame: the file is cut');
      if (kind === TRAILER) {
        if (body.length !== 4 || body.readUInt32BE(0) !== crc >>> 0) throw new Error('its CRC does not match: the file is damaged');
        if ((await reader.take(1)) !== null) throw new Error('data after its CRC');
        return;
      }
      crc = crc32(body, crc32(head, crc));
      yield { kind, body };
    }
  } finally {
    await handle.close();
  }
}

class FrameReader {
  private buffer = Buffer.alloc(0);
  private at = 0;
  private end = 0;
  private filePosition = 0;

  constructor(private readonly handle: FileHandle) {}

  /** The next `length` bytes (never overwritten: each buffer is filled once), or null at the file's end. */
  async take(length: number): Promise<Buffer | null> {
    if (this.end - this.at < length) {
      const kept = this.end - this.at;
      const next = Buffer.allocUnsafe(Math.max(length, 8 << 20));
      this.buffer.copy(next, 0, this.at, this.end);
      this.buffer = next;
      this.at = 0;
      this.end = kept;
      while (this.end < length) {
        const { bytesRead } = await this.handle.read(this.buffer, this.end, this.buffer.length - this.end, this.filePosition);
        if (bytesRead === 0) return null;
        this.end += bytesRead;
        this.filePosition += bytesRead;
      }
    }
    const taken = this.buffer.subarray(this.at, this.at + length);
    this.at += length;
    return taken;
  }
}

/** The values each shared field takes in the chunk (a field equal to the id is left out: its values are the ids). */
const sharedValuesOf = (head: ChunkHead): Map<string, ReadonlyArray<unknown>> => {
  const values = new Map<string, ReadonlyArray<unknown>>();
  for (const [field, list] of head.shared) if (list !== null) values.set(field, list);
  return values;
};

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
  /** The id of the event at a position of the log (null when there is none): a snapshot of another log is not used. */
  eventIdAt(position: Position): Promise<string | null>;
  /**
   * A chunk's documents by their ids, with how to decode them when first read (the memory read
   * store's restoreChunk). The whole file's CRC is checked before the load returns (a damaged
   * file is cleared), so a chunk decoded later is one whose bytes were checked.
   */
  restore(collection: string, chunk: PendingDocuments): void;
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
          const eventId = BigInt(header.position) === 0n ? null : await options.eventIdAt(BigInt(header.position));
          if (eventId !== header.event_id) throw new Error(`the log's event at its position ${header.position} is not the one it covers: not made from this log`);
        } else if (header === null) {
          throw new Error('no header');
        } else if (kind === COLLECTION) {
          collection = body.toString();
        } else if (kind === DOCS && collection !== null) {
          const head = decodeChunkHead(body);
          loadedAny = true;
          options.restore(collection, { ids: head.ids, values: sharedValuesOf(head), decode: () => decodeDocuments(head) });
          documents += head.ids.length;
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
