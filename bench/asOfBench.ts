import { join } from 'node:path';
import type { EventToAppend } from '../shared/events.ts';
import { openSqliteEventStore } from '../ops/event-store/sqlite/SqliteEventStore.ts';
import { ItemAsOfReader } from '../query-side/catalog/ItemAsOfReader.ts';
import { SqliteFoldCheckpoints } from '../ops/snapshots/SqliteFoldCheckpoints.ts';
import { percentile } from './latencyFigures.ts';

const LAUI = '65a0000000000000000000a5';
const START = Date.parse('2026-01-01T00:00:00Z');
const at = (change: number): string => new Date(START + change * 1000).toISOString();

/**
 * Issue 36: an as-of read of an item with `changes` changes, on the SQLite log, at instants spread
 * over its history: with the fold snapshots (ItemAsOfReader, every 100 events; warm, after one
 * read built them) against a plain fold from the stream's start, same instants, same run. The
 * first (cold) read, which builds the snapshots, is its own figure; so is the first read of a
 * reader that starts anew (a restart) with the snapshots kept in a SQLite file, as the service
 * keeps them in DATA_DIR: one fresh reader per instant.
 */
export async function benchAsOf(opts: { dir: string; changes?: number; reads?: number }): Promise<Array<Record<string, unknown>>> {
  const changes = opts.changes ?? 10_000;
  const reads = opts.reads ?? 50;
  const store = openSqliteEventStore({ file: join(opts.dir, 'as-of.sqlite'), synchronous: 'normal' });
  const metadata = (change: number) => ({ user_laui: null, correlation_id: 'bench', causation_id: null, at: at(change) });
  await store.append(
    `item-${LAUI}`,
    [
      {
        type: 'ItemCreated',
        data: { laui: LAUI, item_type: 'payload', name: 'hot', parent_laui: null, parent_type: null, link_laui: null, is_root: true, fields: { content: { n: 0 } }, access: { owners: {}, editors: {}, viewers: {} }, version: 1, revision_laui: LAUI },
        metadata: metadata(0),
      },
    ],
    'no_stream',
  );
  for (let first = 1; first <= changes; first += 500) {
    const events: EventToAppend[] = [];
    for (let change = first; change < first + 500 && change <= changes; change += 1) {
      events.push({ type: 'ItemUpdated', data: { changes: { content: { n: change, table: `schema.table_${change}`, columns: ['id', 'name', 'updated_at'] } }, version: change + 1, revision_laui: LAUI }, metadata: metadata(change) });
    }
    await store.append(`item-${LAUI}`, events, 'any');
  }
  // The same spread of instants for both: every part of the history, the newest included.
  const instants = Array.from({ length: reads }, (_, index) => at(Math.round(((index * 7919) % reads) * (changes / reads)) + 0.5));
  const time = async (read: (instant: string) => Promise<unknown>): Promise<number[]> => {
    const samples: number[] = [];
    for (const instant of instants) {
      const started = performance.now();
      await read(instant);
      samples.push(performance.now() - started);
    }
    return samples.sort((a, b) => a - b);
  };
  const reader = new ItemAsOfReader(store);
  const coldStarted = performance.now();
  await reader.at(LAUI, at(1));
  const cold = performance.now() - coldStarted;
  const snapshots = await time((instant) => reader.at(LAUI, instant));
  const plain = await time((instant) => reader.foldFromStart(LAUI, instant));
  const checkpoints = new SqliteFoldCheckpoints({ file: join(opts.dir, 'as-of-snapshots.sqlite'), origin: () => Promise.resolve('bench') });
  await new ItemAsOfReader(store, { checkpoints }).at(LAUI, at(1));
  const afterStart = await time((instant) => new ItemAsOfReader(store, { checkpoints }).at(LAUI, instant));
  checkpoints.close();
  await store.close();
  const figure = (name: string, samples: number[], extra: Record<string, unknown> = {}) => ({
    bench: 'asof',
    name,
    unit: 'ms',
    changes,
    reads,
    p50: percentile(samples, 0.5),
    p99: percentile(samples, 0.99),
    max: Number((samples.at(-1) ?? NaN).toFixed(2)),
    ...extra,
  });
  return [
    figure('as_of read, fold snapshots every 100 events (warm)', snapshots, { target: 'p99 <= 50 ms', pass: percentile(snapshots, 0.99) <= 50 }),
    figure('as_of read, plain fold from the stream start (baseline)', plain),
    figure('first as_of read after a start, fold snapshots kept in DATA_DIR', afterStart, { target: 'p99 <= 50 ms', pass: percentile(afterStart, 0.99) <= 50 }),
    { bench: 'asof', name: 'first as_of read of a stream never folded (builds the snapshots; the service folds in the background as the stream grows)', unit: 'ms', changes, value: Number(cold.toFixed(2)) },
  ];
}
