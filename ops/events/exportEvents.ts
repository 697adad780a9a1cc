import { chmodSync, createWriteStream, renameSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import type { EventStore, Position } from '../../shared/event-store/EventStore.ts';
import { toEnvelope } from '../../query-side/events/eventEnvelope.ts';
import { eventMatches } from '../../query-side/events/readEventsPage.ts';

/** What an export writes: JSON lines (the served envelopes), or through DuckDB Parquet or CSV. */
export const EXPORT_FORMATS = ['jsonl', 'parquet', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export interface ExportOptions {
  /** Exclusive, like GET /events. */
  from: Position;
  /** Inclusive; the head at the start of the export when absent. */
  to?: Position;
  type?: string;
  /** Stop at the first event recorded at or after this time (ms): an archive's retention window. */
  recordedBeforeMs?: number;
  format: ExportFormat;
  out: string;
  /** Called after each page: positions covered so far of the whole range. */
  onProgress?(done: number, total: number): void;
}

const PAGE = 1000;

/**
 * Writes the served envelopes (GET /events, redacted) of (from, to] to a file: JSON lines, or
 * Parquet or CSV through DuckDB. The file appears whole or not at all (written aside, then renamed).
 */
export const exportEvents = async (store: EventStore, options: ExportOptions): Promise<{ events: number; last: Position }> => {
  const head = await store.headPosition();
  const to = options.to !== undefined && options.to < head ? options.to : head;
  const total = Number(to > options.from ? to - options.from : 0n);
  const matches = eventMatches(options.type === undefined ? {} : { type: options.type });
  const jsonl = options.format === 'jsonl' ? `${options.out}.partial` : `${options.out}.partial.jsonl`;
  const file = createWriteStream(jsonl, { mode: 0o600 });
  let events = 0;
  let last = options.from;
  let ended = false;
  try {
    while (last < to && !ended) {
      const page = await store.readAll({ after: last, maxCount: PAGE });
      if (page.length === 0) break;
      let chunk = '';
      for (const event of page) {
        ended = event.position > to || (options.recordedBeforeMs !== undefined && Date.parse(event.recordedAt) >= options.recordedBeforeMs);
        if (ended) break;
        last = event.position;
        if (!matches(event)) continue;
        chunk += `${JSON.stringify(toEnvelope(event))}\n`;
        events += 1;
      }
      // Waits for the disk when its buffer is full: memory stays at about one page.
      if (!file.write(chunk)) await once(file, 'drain');
      options.onProgress?.(Number(last - options.from), total);
      if (page.length < PAGE) break;
    }
    file.end();
    await once(file, 'close');
    if (options.format !== 'jsonl') {
      await convertJsonl(jsonl, `${options.out}.partial`, options.format);
      rmSync(jsonl, { force: true });
    }
    // Redacted, yet every user's activity: readable by the operator only (DuckDB's file too).
    chmodSync(`${options.out}.partial`, 0o600);
    renameSync(`${options.out}.partial`, options.out);
    return { events, last };
  } catch (error) {
    file.destroy();
    rmSync(jsonl, { force: true });
    rmSync(`${options.out}.partial`, { force: true });
    throw error;
  }
};

const sqlString = (text: string): string => `'${text.replace(/'/g, "''")}'`;

/** The envelope's schema as DuckDB's read_json takes it. */
const ENVELOPE_COLUMNS =
  "{position: 'BIGINT', stream: 'VARCHAR', revision: 'BIGINT', type: 'VARCHAR', version: 'INTEGER', data: 'JSON', " +
  `metadata: 'STRUCT(user_laui VARCHAR, "at" VARCHAR, correlation_id VARCHAR, causation_id VARCHAR)'}`;

/**
 * What each format writes of the envelope: Parquet keeps `metadata` a struct; CSV has flat cells
 * only, so its fields become columns of their own (`data` stays its JSON text: each event type has
 * its own fields).
 */
const SELECTS: Readonly<Record<Exclude<ExportFormat, 'jsonl'>, { columns: string; copy: string }>> = {
  parquet: { columns: '*', copy: 'FORMAT parquet, COMPRESSION zstd' },
  csv: {
    columns: 'position, stream, revision, type, version, data, metadata.user_laui AS user_laui, metadata."at" AS "at", metadata.correlation_id AS correlation_id, metadata.causation_id AS causation_id',
    copy: 'FORMAT csv, HEADER true',
  },
};

/**
 * DuckDB reads the JSON lines with the envelope's schema spelled out (no sampling guesswork):
 * `data` stays a JSON column, since each event type has its own fields.
 */
export const convertJsonl = async (jsonl: string, out: string, format: Exclude<ExportFormat, 'jsonl'>): Promise<void> => {
  // Loaded here: the CLI's other commands do not pay for the native module.
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const { columns, copy } = SELECTS[format];
    await connection.run(
      `COPY (SELECT ${columns} FROM read_json(${sqlString(jsonl)}, format = 'newline_delimited', columns = ${ENVELOPE_COLUMNS}) ORDER BY position) ` +
        `TO ${sqlString(out)} (${copy})`,
    );
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
};
