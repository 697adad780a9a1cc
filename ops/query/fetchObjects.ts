import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { QueryTargetError } from '../../shared/ports/QueryTarget.ts';
import type { ObjectEntry, ObjectStore } from './ObjectStore.ts';
import { globPrefix, globRegExp, hasGlob } from './objectGlob.ts';
import type { UrlLiteral } from './objectUrlLiterals.ts';
import type { QueryRun } from './queryRun.ts';

export interface FetchLimits {
  maxBytes: number;
  maxObjects: number;
  connectTimeoutMs: number;
}

/** Downloads at once: enough to hide a store's latency, few enough not to crowd the service's sockets. */
const PARALLEL_DOWNLOADS = 4;

const mib = (bytes: number): string => `${Math.ceil(bytes / 1024 / 1024)} MiB`;

interface ParsedUrl {
  literal: UrlLiteral;
  bucket: string;
  path: string;
}

/**
 * A URL as bucket and path, refused (400) when the scheme is not this store's, when it names no
 * object, or when a path segment is empty, `.` or `..` (such a key has no faithful local copy, and
 * `..` would point the local glob out of the folder).
 */
const parse = (literal: UrlLiteral, store: ObjectStore): ParsedUrl => {
  const match = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/]*)\/(.*)$/s.exec(literal.url);
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(literal.url)?.[1]?.toLowerCase() ?? '';
  if (!store.schemes.includes(scheme)) {
    throw new QueryTargetError('sql', `${literal.url.slice(0, 200)}: a ${store.label} connection reads ${store.schemes.map((name) => `${name}://`).join(' or ')} URLs`);
  }
  if (!match || match[2] === '' || match[3] === '') {
    throw new QueryTargetError('sql', `${literal.url.slice(0, 200)}: name an object or a glob as ${scheme}://<bucket>/<path>`);
  }
  const path = match[3] as string;
  if (path.split('/').some((segment) => segment === '' || segment === '.' || segment === '..') || path.includes('\0')) {
    throw new QueryTargetError('sql', `${literal.url.slice(0, 200)}: paths with empty, "." or ".." segments cannot be read`);
  }
  return { literal, bucket: match[2] as string, path };
};

const readableKey = (key: string): boolean => !key.endsWith('/') && !key.includes('\0') && !key.split('/').some((segment) => segment === '' || segment === '.' || segment === '..');

/**
 * Fetches the objects the statement's URL literals name into `root` (one folder per bucket, keys
 * kept as paths so globs and hive partitions read the same locally) and answers the local text
 * for each literal: the same path or glob under the bucket's folder. Refused before anything is
 * downloaded when the objects come to more than `maxBytes` or `maxObjects`; the bytes are counted
 * again while downloading (an object may grow between listing and reading).
 */
export const fetchObjects = async (
  store: ObjectStore,
  literals: ReadonlyArray<UrlLiteral>,
  root: string,
  limits: FetchLimits,
  run: QueryRun,
): Promise<Array<{ literal: UrlLiteral; text: string }>> => {
  const parsed = literals.map((literal) => parse(literal, store));
  const bucketDirs = new Map<string, string>();
  const objects = new Map<string, { bucket: string; entry: ObjectEntry; file: string }>();
  let total = 0;
  let contacted = false;
  /** The first call to the store is its connect test (unreachable past the connect timeout); the others run on the statement's clock. */
  const call = <T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> => {
    if (contacted) return run.step(work);
    contacted = true;
    return run.firstContact(limits.connectTimeoutMs, store.label, work);
  };
  const add = (bucket: string, entry: ObjectEntry) => {
    const id = `${bucket}\0${entry.key}`;
    if (objects.has(id)) return;
    total += entry.size;
    if (objects.size + 1 > limits.maxObjects) {
      throw new QueryTargetError('sql', `The statement reads more than ${limits.maxObjects} objects (QUERY_OBJECTS_MAX_COUNT); narrow the glob`);
    }
    if (total > limits.maxBytes) {
      throw new QueryTargetError('sql', `The objects the statement reads come to more than ${mib(limits.maxBytes)} (QUERY_OBJECTS_MAX_MB); narrow the glob or read fewer objects`);
    }
    objects.set(id, { bucket, entry, file: join(root, bucketDirs.get(bucket) as string, ...entry.key.split('/')) });
  };

  const replacements: Array<{ literal: UrlLiteral; text: string }> = [];
  for (const url of parsed) {
    if (!bucketDirs.has(url.bucket)) bucketDirs.set(url.bucket, `b${bucketDirs.size}`);
    try {
      if (hasGlob(url.path)) {
        const pattern = globRegExp(url.path);
        const listing = store.list(url.bucket, globPrefix(url.path), run.signal)[Symbol.asyncIterator]();
        for (;;) {
          const next = await call(() => listing.next());
          if (next.done) break;
          if (readableKey(next.value.key) && pattern.test(next.value.key)) add(url.bucket, next.value);
        }
      } else {
        const entry = await call((signal) => store.head(url.bucket, url.path, signal));
        if (entry === null) throw new QueryTargetError('sql', `${url.literal.url.slice(0, 200)}: no such object`);
        add(url.bucket, entry);
      }
    } catch (error) {
      if (run.stopped) throw run.stoppedError();
      throw store.failure(error, url.literal.url.slice(0, 200));
    }
    replacements.push({ literal: url.literal, text: join(root, bucketDirs.get(url.bucket) as string, ...url.path.split('/')) });
  }

  let downloaded = 0;
  const meter = () =>
    new Transform({
      transform(chunk: Buffer, _encoding, done) {
        downloaded += chunk.length;
        if (downloaded > limits.maxBytes) {
          done(new QueryTargetError('sql', `The objects the statement reads came to more than ${mib(limits.maxBytes)} (QUERY_OBJECTS_MAX_MB) while downloading`));
        } else done(null, chunk);
      },
    });
  // The first failure stops the other downloads, and every download has ended before this
  // returns or throws: the caller removes the folder next, and no write may land after that.
  const queue = [...objects.values()];
  const failed = new AbortController();
  const signal = AbortSignal.any([run.signal, failed.signal]);
  let firstError: unknown = null;
  const worker = async () => {
    for (let next = queue.shift(); next !== undefined && !signal.aborted; next = queue.shift()) {
      const { bucket, entry, file } = next;
      const what = `${bucket}/${entry.key}`;
      try {
        await mkdir(dirname(file), { recursive: true });
        const body = await run.step((stepSignal) => store.read(bucket, entry.key, AbortSignal.any([stepSignal, failed.signal])));
        await pipeline(body, meter(), createWriteStream(file, { flags: 'wx' }), { signal });
      } catch (error) {
        if (firstError === null && !signal.aborted) firstError = classify(error, what);
        else if (firstError === null && run.stopped) firstError = run.stoppedError();
        failed.abort();
        return;
      }
    }
  };
  const classify = (error: unknown, what: string): unknown => {
    if (error instanceof QueryTargetError) return error;
    const code = (error as { code?: string }).code;
    if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR') {
      return new QueryTargetError('sql', `${what}: an object and a folder of the same name cannot both be read`);
    }
    return store.failure(error, what);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_DOWNLOADS, queue.length) }, worker));
  if (run.stopped) throw run.stoppedError();
  if (firstError !== null) throw firstError;
  return replacements;
};
