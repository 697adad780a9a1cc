import { readdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection, DuckDBInstance, DuckDBPreparedStatement, Json } from '@duckdb/node-api';
import { LOG_CATEGORIES, type LogCategory } from '../../shared/ports/Logger.ts';
import { explainedStatement } from './explainedStatement.ts';
import { jsonSafeConverter } from './jsonSafeValues.ts';

/** POST /api/v1/logs/query's limits (README: LOG_QUERY_* settings). */
export interface LogQuerySettings {
  /** The whole query, from arrival to rows (spec 8: 30 s); the connection is interrupted then. */
  timeoutMs: number;
  /** DuckDB's memory_limit per query; no spilling to disk, so a query needing more fails. */
  memoryLimitMb: number;
  /** DuckDB's threads per query. */
  threads: number;
  /** Rows returned at most; `truncated` says when there were more (the spec sets no cap: 4.10's 10,000). */
  maxRows: number;
  /** Lines of each day file DuckDB reads to infer the columns; 0 reads every line (slow: ~4 s per million). */
  sampleLines: number;
  /** Queries running at once; up to four times as many wait (within their timeout), more are refused. */
  maxConcurrent: number;
}

export const DEFAULT_LOG_QUERY_SETTINGS: LogQuerySettings = {
  timeoutMs: 30_000,
  memoryLimitMb: 512,
  threads: 2,
  maxRows: 10_000,
  sampleLines: 20_480,
  maxConcurrent: 2,
};

/** The spec's 200 bodies: rows, or `{error}` for every failure. */
export type LogQueryAnswer = { columns: string[]; rows: Json[][]; row_count: number; truncated: boolean } | { error: string };

/** One query's request once checked. */
export interface LogQueryRequest {
  sql: string;
  category: LogCategory;
  /** YYYY-MM-DD: that day's file only; absent: every day of the category. */
  date: string | null;
}

const DAY_FILE = /^(\d{4}-\d{2}-\d{2})\.jsonl$/;
/** DuckDB's messages carry the statement with a caret; a 1 MB statement need not come back whole. */
const MAX_ERROR_LENGTH = 2000;

const isRealDate = (text: string): boolean => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const date = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === text;
};

/** The body checked in the spec's order: a missing category is an error at once, before the SQL is looked at. */
export const logQueryRequest = (body: unknown): LogQueryRequest | { error: string } => {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { error: 'The request body must be a JSON object with sql, category and optionally date' };
  }
  const { sql, category, date } = body as Record<string, unknown>;
  if (category === undefined || category === null || category === '') {
    return { error: `category is required: one of ${LOG_CATEGORIES.join(', ')}` };
  }
  if (typeof category !== 'string' || !(LOG_CATEGORIES as ReadonlyArray<string>).includes(category)) {
    return { error: `Unknown category ${JSON.stringify(category).slice(0, 60)}: one of ${LOG_CATEGORIES.join(', ')}` };
  }
  if (typeof sql !== 'string' || sql.trim() === '') return { error: 'sql is required: one SELECT statement over the view logs' };
  if (date !== undefined && date !== null && (typeof date !== 'string' || !isRealDate(date))) {
    return { error: `date must be a calendar date as YYYY-MM-DD, got ${JSON.stringify(date).slice(0, 60)}` };
  }
  return { sql, category: category as LogCategory, date: typeof date === 'string' ? date : null };
};

/** A SQL string literal. */
const sqlString = (text: string): string => `'${text.replace(/'/g, "''")}'`;

/**
 * The category's day files to scan, as real paths: regular files named <YYYY-MM-DD>.jsonl, not
 * empty (an empty file alone would make DuckDB invent a `json` column). Symbolic links are not
 * followed: a link in the folder does not pull another file into the view (DuckDB refuses a link
 * out of the allowed folder anyway).
 */
const dayFiles = async (logsRoot: string, request: LogQueryRequest): Promise<{ folder: string; files: string[] } | { error: string }> => {
  const when = request.date === null ? '' : ` on ${request.date}`;
  const none = { error: `No log files for category ${request.category}${when} yet` };
  let folder: string;
  try {
    folder = await realpath(join(logsRoot, request.category));
  } catch {
    return none;
  }
  const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
  const names = entries
    .filter((entry) => entry.isFile() && DAY_FILE.test(entry.name) && (request.date === null || entry.name === `${request.date}.jsonl`))
    .map((entry) => entry.name)
    .sort();
  const files: string[] = [];
  for (const name of names) {
    const size = await stat(join(folder, name)).then((info) => info.size, () => 0);
    if (size > 0) files.push(join(folder, name));
  }
  return files.length === 0 ? none : { folder, files };
};

/**
 * The answer's text at most (UTF-16 units of its strings, ~bytes): maxRows bounds the rows, this
 * their width, e.g. `SELECT repeat('x', 400000000)` or string_agg over a month of messages.
 */
const MAX_ANSWER_CHARS = 32 * 1024 * 1024;

/** Whether the strings and numbers in `value` add up to more than `budget` characters (stops early). */
const widerThan = (rows: Json[][], budget: number): boolean => {
  let left = budget;
  const visit = (value: Json): boolean => {
    if (typeof value === 'string') left -= value.length + 2;
    else if (value === null || typeof value !== 'object') left -= 8;
    else if (Array.isArray(value)) return value.some(visit);
    else {
      return Object.entries(value).some(([key, inner]) => {
        left -= key.length + 3;
        return visit(inner);
      });
    }
    return left < 0;
  };
  return rows.some((row) => row.some(visit));
};

/** Thrown inside a query once its time is up or its client left: the answer has gone already. */
class Abandoned extends Error {}

const messageOf = (error: unknown): string => {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH)}…` : text;
};

interface Run {
  connection: DuckDBConnection | null;
  over: boolean;
}

/**
 * A fresh in-memory DuckDB per query (nothing of one query can be seen by the next): extensions
 * are neither installed nor loaded on demand, memory and threads are bounded, and there is no
 * temporary directory, so nothing spills to disk. The file sandbox is set on its connection.
 */
const openSandbox = async (duckdb: typeof import('@duckdb/node-api'), settings: LogQuerySettings): Promise<DuckDBInstance> =>
  duckdb.DuckDBInstance.create(':memory:', {
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
    allow_community_extensions: 'false',
    allow_unsigned_extensions: 'false',
    threads: String(settings.threads),
    memory_limit: `${settings.memoryLimitMb}MB`,
    temp_directory: '',
    // Unset, DuckDB takes HTTP_PROXY from the environment and shows it (with any credentials in
    // it) to `SELECT * FROM duckdb_settings()`. Nothing here goes to the network.
    http_proxy: 'none',
  });

/**
 * Runs one query: sandbox, the view `logs`, DuckDB's parser deciding the statement is exactly one
 * SELECT (WITH, DESCRIBE, SHOW, FROM-first included) or an EXPLAIN of one, then at most maxRows + 1
 * rows read from a streaming result. Checks `run.over` after every step it waits for.
 */
const execute = async (request: LogQueryRequest, logsRoot: string, settings: LogQuerySettings, run: Run): Promise<LogQueryAnswer> => {
  const found = await dayFiles(logsRoot, request);
  if ('error' in found) return found;
  // Loaded on the first query: the service's other paths do not pay for the native module.
  const duckdb = await import('@duckdb/node-api');
  if (run.over) throw new Abandoned();
  const instance = await openSandbox(duckdb, settings);
  const prepared: DuckDBPreparedStatement[] = [];
  try {
    const connection = await instance.connect();
    run.connection = connection;
    try {
      /** One wait on DuckDB, not started and not carried on once the query is over. */
      const step = async <T>(work: () => Promise<T>): Promise<T> => {
        if (run.over) throw new Abandoned();
        const value = await work();
        if (run.over) throw new Abandoned();
        return value;
      };
      // Locked down before anything of the caller's is parsed, in this order: the category's
      // folder (with its slash: TASK/ is not a prefix of TASK_HISTORY/) is allowed while the
      // configuration can still change, then external access goes off, then the configuration is
      // locked, so no SET can undo either.
      await step(() => connection.run(`SET allowed_directories = [${sqlString(`${found.folder}/`)}]`));
      await step(() => connection.run('SET enable_external_access = false'));
      await step(() => connection.run('SET lock_configuration = true'));

      // Columns are inferred once (merged by name over the days), then spelled out in the view: a
      // view over plain read_json would sample the files again at every bind (~100 ms a day file).
      // ignore_errors: a malformed line reads as a row of NULLs, a value of the wrong type as NULL,
      // and the rest of the day stays readable.
      const files = `[${found.files.map(sqlString).join(', ')}]`;
      const sample = settings.sampleLines > 0 ? settings.sampleLines : -1;
      const described = await step(() =>
        connection.runAndReadAll(
          `DESCRIBE SELECT * FROM read_json(${files}, format = 'newline_delimited', union_by_name = true, ignore_errors = true, sample_size = ${sample})`,
        ),
      );
      const columns = described
        .getRowObjectsJson()
        .map((row) => `${sqlString(String(row.column_name))}: ${sqlString(String(row.column_type))}`)
        .join(', ');
      await step(() => connection.run(`CREATE VIEW logs AS SELECT * FROM read_json(${files}, format = 'newline_delimited', ignore_errors = true, columns = {${columns}})`));

      const statement = await step(() => singleStatement(duckdb, connection, request.sql, prepared));
      if ('error' in statement) return statement;
      const reader = await step(() => statement.prepared.streamAndReadUntil(settings.maxRows + 1));
      const rows = reader.convertRows(jsonSafeConverter(duckdb));
      const truncated = rows.length > settings.maxRows;
      if (truncated) rows.length = settings.maxRows;
      if (widerThan(rows, MAX_ANSWER_CHARS)) {
        return { error: `The result is larger than ${MAX_ANSWER_CHARS / 1024 / 1024} MB; select fewer or narrower columns, or fewer rows` };
      }
      return { columns: reader.columnNames(), rows, row_count: rows.length, truncated };
    } finally {
      for (const statement of prepared) statement.destroySync();
      run.connection = null;
      connection.closeSync();
    }
  } finally {
    instance.closeSync();
  }
};

/** The SQL's first word (after comments), for messages only: no decision rests on it. */
const firstWord = (sql: string): string => /^[A-Za-z_]+/.exec(sql.replace(/^(\s+|--[^\n]*(\n|$)|\/\*[\s\S]*?\*\/)+/, ''))?.[0].toUpperCase() ?? 'this';

const ALLOWED = 'Only one SELECT statement (WITH, DESCRIBE, SHOW, SUMMARIZE, FROM-first) or an EXPLAIN of one is allowed';

/**
 * DuckDB's own parser decides, in three steps, and nothing is bound (prepared) before the first
 * two have passed: binding is where DuckDB acts on paths, and some statements act while being
 * bound (EXPORT DATABASE '<the category folder>/x' creates its directory when prepared).
 *  1. extractStatements (parse only): exactly one statement.
 *  2. json_serialize_sql (parse only; it serializes SELECT statements and refuses every other
 *     kind): a SELECT, or an EXPLAIN whose explained statement, parsed the same way, is one.
 *  3. prepare (bound in the sandbox: a read outside the folder fails here) and its statement type
 *     confirmed SELECT or EXPLAIN.
 * Prepared statements go to `keep` for the caller to destroy.
 */
const singleStatement = async (
  duckdb: typeof import('@duckdb/node-api'),
  connection: DuckDBConnection,
  sql: string,
  keep: DuckDBPreparedStatement[],
): Promise<{ prepared: DuckDBPreparedStatement } | { error: string }> => {
  const { StatementType } = duckdb;
  const extract = async (text: string) => {
    try {
      return await connection.extractStatements(text);
    } catch (error) {
      // An empty or comment-only text fails with a bare "Error in native callback".
      const message = messageOf(error);
      return { error: /native callback/.test(message) ? 'No SQL statement found' : message };
    }
  };
  /** One SELECT statement as DuckDB parses `text`, told without binding it; or why not. */
  const parsedSelect = async (text: string): Promise<true | { error: string }> => {
    const serialize = await connection.prepare('SELECT json_serialize_sql($1::VARCHAR) AS tree');
    keep.push(serialize);
    serialize.bindVarchar(1, text);
    const reader = await serialize.runAndReadAll();
    const tree = JSON.parse(String(reader.getRows()[0]?.[0] ?? '{}')) as { error?: boolean; error_type?: string; error_message?: string; statements?: unknown[] };
    if (tree.error) return { error: tree.error_type === 'not implemented' ? `${ALLOWED}, not ${firstWord(text)}` : String(tree.error_message) };
    return tree.statements?.length === 1 ? true : { error: ALLOWED };
  };

  const extracted = await extract(sql);
  if ('error' in extracted) return extracted;
  if (extracted.count !== 1) return { error: `Exactly one SQL statement is allowed, found ${extracted.count}` };
  const select = await parsedSelect(sql);
  if (select !== true) {
    const inner = explainedStatement(sql);
    if (inner === null) return select;
    if ((await parsedSelect(inner)) !== true) return { error: 'EXPLAIN is allowed of a SELECT only' };
  }
  const prepared = await extracted.prepare(0);
  keep.push(prepared);
  const type = prepared.statementType;
  if (type === StatementType.SELECT || type === StatementType.EXPLAIN) return { prepared };
  return { error: `${ALLOWED}, not ${StatementType[type] ?? type}` };
};

/**
 * One query over a category's logs, answered as the spec says: rows, or `{error}` for anything
 * that goes wrong (never a throw). Past `settings.timeoutMs` (or when `signal` aborts: the client
 * left) the connection is interrupted and the answer is an error at once; the sandbox is closed
 * when DuckDB returns.
 */
export const queryLogs = async (
  body: unknown,
  options: { logsRoot: string; settings?: Partial<LogQuerySettings>; signal?: AbortSignal; deadline?: number },
): Promise<LogQueryAnswer> => {
  const settings = { ...DEFAULT_LOG_QUERY_SETTINGS, ...options.settings };
  const request = logQueryRequest(body);
  if ('error' in request) return request;
  const run: Run = { connection: null, over: false };
  const started = Date.now();
  const deadline = options.deadline ?? started + settings.timeoutMs;
  let stop: (answer: LogQueryAnswer) => void = () => undefined;
  let interrupting: NodeJS.Timeout | undefined;
  const stopped = new Promise<LogQueryAnswer>((resolve) => {
    stop = (answer) => {
      if (run.over) return;
      run.over = true;
      resolve(answer);
      // Again until DuckDB returns: an interrupt that lands before the statement has started on
      // DuckDB's thread is forgotten when it starts.
      run.connection?.interrupt();
      interrupting = setInterval(() => run.connection?.interrupt(), 100);
    };
  });
  const timer = setTimeout(
    () => stop({ error: `The query ran past the ${settings.timeoutMs / 1000} s limit and was interrupted` }),
    Math.max(0, deadline - started),
  );
  const onAbort = () => stop({ error: 'The client went away; the query was interrupted' });
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const work = execute(request, options.logsRoot, settings, run)
      .catch((error: unknown): LogQueryAnswer => ({ error: error instanceof Abandoned ? 'interrupted' : messageOf(error) }))
      .finally(() => clearInterval(interrupting));
    return await Promise.race([work, stopped]);
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  }
};

/** What the route calls: queryLogs behind a bound on the queries running and waiting at once. */
export interface LogQueries {
  query(body: unknown, signal?: AbortSignal): Promise<LogQueryAnswer>;
}

/**
 * Each query may hold memoryLimitMb and `threads` cores for up to timeoutMs, and the route is
 * public by the spec: at most maxConcurrent run at once, up to four times as many wait for a turn
 * (the wait counts against their timeout), and beyond that a query is refused at once.
 */
export const logQueries = (deps: { logsRoot: string; settings?: Partial<LogQuerySettings> }): LogQueries => {
  const settings = { ...DEFAULT_LOG_QUERY_SETTINGS, ...deps.settings };
  let running = 0;
  const waiting: Array<{ go(): void }> = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next.go();
    else running -= 1;
  };
  return {
    async query(body, signal) {
      const request = logQueryRequest(body);
      if ('error' in request) return request;
      const deadline = Date.now() + settings.timeoutMs;
      if (running >= settings.maxConcurrent) {
        if (waiting.length >= settings.maxConcurrent * 4) return { error: 'Too many log queries at once; try again shortly' };
        const turn = await new Promise<boolean>((resolve) => {
          const giveUp = () => {
            const index = waiting.indexOf(waiter);
            if (index !== -1) waiting.splice(index, 1);
            resolve(false);
          };
          const timer = setTimeout(giveUp, settings.timeoutMs);
          const waiter = {
            go: () => {
              clearTimeout(timer);
              signal?.removeEventListener('abort', giveUp);
              resolve(true);
            },
          };
          waiting.push(waiter);
          signal?.addEventListener('abort', giveUp, { once: true });
        });
        if (!turn) return { error: `The query waited past the ${settings.timeoutMs / 1000} s limit for a turn` };
      } else {
        running += 1;
      }
      try {
        return await queryLogs(body, { logsRoot: deps.logsRoot, settings, deadline, ...(signal ? { signal } : {}) });
      } finally {
        release();
      }
    },
  };
};
