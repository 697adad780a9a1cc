import { join } from 'node:path';
import Database from 'better-sqlite3';
import { storedEventHasher, GENESIS_HASH } from '../shared/event-store/hashChain.ts';
import { AppendBatchWriter, type AppendRequest } from '../ops/event-store/sqlite/AppendBatchWriter.ts';
import { openEventStoreDatabase } from '../ops/event-store/sqlite/openEventStoreDatabase.ts';

/** Appends per transaction and events per append: a busy writer thread's group commit of task events. */
const APPENDS_PER_BATCH = 64;
const EVENTS_PER_APPEND = 3;
const ROUNDS = 3;

/** A task's lifecycle event as the serializer writes it (~450 bytes of data, the metadata shared by a command's events). */
const storedEvent = (n: number): { id: string; type: string; data: string; metadata: string } => ({
  id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  type: 'TaskSucceeded',
  data: JSON.stringify({
    from: 'running',
    to: 'success',
    changes: { state: 'success', last_run_output: { status: 'success', rows: n, note: 'loaded the partition of the day' }, last_run_end: '2026-01-01T00:00:00.000Z', retry_number: 0 },
    version: 3,
    revision_laui: null,
  }),
  metadata: JSON.stringify({ user_laui: '65a0c0ffee0000000000beef', at: '2026-01-01T00:00:00.000Z', correlation_id: `corr-${Math.floor(n / 3)}`, causation_id: null, version: 1 }),
});

const batches = (count: number, offset: number): AppendRequest[][] =>
  Array.from({ length: count }, (_, batch) =>
    Array.from({ length: APPENDS_PER_BATCH }, (_, append) => {
      const first = offset + (batch * APPENDS_PER_BATCH + append) * EVENTS_PER_APPEND;
      return { streamId: `item-${first}`, expected: 'no_stream' as const, events: Array.from({ length: EVENTS_PER_APPEND }, (_, index) => storedEvent(first + index)) };
    }),
  );

/** The writer before the chain: the same rows, multi-row INSERTs of schema 1's columns, one transaction a batch. */
const unchainedWrite = (db: Database.Database): ((batch: AppendRequest[], recordedAt: string) => void) => {
  const insert = db.prepare('INSERT INTO events (stream_id, revision, id, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
  return db.transaction((batch: AppendRequest[], recordedAt: string) => {
    for (const append of batch) for (const [revision, event] of append.events.entries()) insert.run(append.streamId, revision, event.id, event.type, event.data, event.metadata, recordedAt);
  });
};

/**
 * What the hash chain costs the writer (issue 36), in one run:
 * - the hash of one event (JSON.parse, JCS, SHA-256) beside JSON.parse of the same data alone;
 * - group commits of task events through AppendBatchWriter (revision checks, hashes, one INSERT per
 *   32 rows) beside the same rows inserted with no check and no hash, in transactions of the same
 *   size on the same file settings (synchronous=NORMAL, so the figure is the CPU, not the fsync).
 */
export async function benchHashChain(opts: { dir: string; batches?: number }): Promise<Array<Record<string, unknown>>> {
  const count = opts.batches ?? 200;
  const events = batches(count, 0).flat().flatMap((append) => append.events.map((event, index) => ({ ...event, stream: append.streamId, revision: index })));
  const hasher = storedEventHasher();
  let parseSeconds = 0;
  let hashSeconds = 0;
  for (let round = 0; round < ROUNDS; round += 1) {
    let started = performance.now();
    for (const event of events) JSON.parse(event.data);
    parseSeconds += (performance.now() - started) / 1000;
    started = performance.now();
    for (const [position, event] of events.entries()) hasher({ ...event, position: BigInt(position + 1), prevHash: GENESIS_HASH });
    hashSeconds += (performance.now() - started) / 1000;
  }
  const perEvent = (seconds: number): number => Math.round((seconds / (ROUNDS * events.length)) * 1e7) / 10;

  let chainedSeconds = 0;
  let plainSeconds = 0;
  for (let round = 0; round < ROUNDS; round += 1) {
    const chainedDb = openEventStoreDatabase(join(opts.dir, `chained-${round}.sqlite`), 'normal');
    const writer = new AppendBatchWriter(chainedDb);
    const plainDb = openEventStoreDatabase(join(opts.dir, `plain-${round}.sqlite`), 'normal');
    const plain = unchainedWrite(plainDb);
    const work = batches(count, 0);
    let started = performance.now();
    for (const batch of work) writer.write(batch, '2026-01-01T00:00:00.000Z');
    chainedSeconds += (performance.now() - started) / 1000;
    started = performance.now();
    for (const batch of work) plain(batch, '2026-01-01T00:00:00.000Z');
    plainSeconds += (performance.now() - started) / 1000;
    chainedDb.close();
    plainDb.close();
  }
  const total = ROUNDS * count * APPENDS_PER_BATCH * EVENTS_PER_APPEND;
  return [
    { figure: 'hashchain.hash.per_event', value: perEvent(hashSeconds), unit: 'µs', baseline: perEvent(parseSeconds), baseline_note: 'JSON.parse of the same data alone', note: 'storedEventHasher: parse, JCS, SHA-256 of a ~450-byte task event' },
    {
      figure: 'hashchain.writer.events_per_s',
      value: Math.round(total / chainedSeconds),
      unit: 'events/s',
      baseline: Math.round(total / plainSeconds),
      baseline_note: 'the same rows inserted one by one with no revision check and no hash (schema 1 columns), same transactions',
      note: `AppendBatchWriter, ${APPENDS_PER_BATCH} appends of ${EVENTS_PER_APPEND} events a transaction, synchronous=NORMAL`,
    },
  ];
}
