import mysql, { type Connection, type FieldPacket, type QueryError, type TypeCast } from 'mysql2';
import { QueryTargetError, type QueryRequest, type QueryResult, type QueryTarget, type QueryTargetFactory } from '../../shared/ports/QueryTarget.ts';
import { decimalValue, jsonSafeValue } from '../../shared/query/jsonSafeValue.ts';
import { durationText, QueryWatch } from './QueryWatch.ts';
import { relationalParams, type RelationalParams } from './relationalParams.ts';

/**
 * MySQL and MariaDB (spec 4.10, rdb_b) through `mysql2`: one new connection per request, never
 * pooled (user SQL can change session state: user variables, GET_LOCK, temporary tables), closed
 * when the answer is read.
 *
 * Before the statement the session is made read-only (`SET SESSION TRANSACTION READ ONLY`: every
 * autocommit statement runs in a read-only transaction), in UTC, with the server-side statement
 * limit (MariaDB max_statement_time, MySQL max_execution_time), and with the sql_mode the statement
 * check lexes by (no NO_BACKSLASH_ESCAPES, no ANSI_QUOTES: shared/query/checkStatement.ts). LOAD
 * DATA LOCAL is off (a server cannot ask for the service's files), one statement per call.
 * Rows are streamed (`result` events); at maxRows + 1 the connection stops reading and is closed,
 * so the rest of the result is never read into memory (the server stops at its next write).
 *
 * Values (README "Query values"): integers as numbers while exact, else decimal strings; DECIMAL a
 * number up to 15 significant digits, else its exact string; DATETIME ISO 8601 without offset,
 * TIMESTAMP ISO 8601 in UTC (`Z`), DATE `YYYY-MM-DD` (zero dates as MySQL writes them); TIME and
 * YEAR as the server gives them; JSON parsed; binary strings, BLOB and BIT as base64; the rest as
 * strings.
 */

const SERVER_TIMEOUT_GRACE_MS = 2000;

/** MariaDB 1969 (max_statement_time), MySQL 3024 (max_execution_time), 1317 (query interrupted). */
const TIMEOUT_ERRNOS = new Set([1969, 3024, 1317]);
const UNKNOWN_SYSTEM_VARIABLE = 1193;

/** sql_mode without the modes that change how '...' and "..." are read; `ANSI` implies ANSI_QUOTES. */
const SQL_MODE = `SESSION sql_mode = TRIM(BOTH ',' FROM REPLACE(REPLACE(REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), ',NO_BACKSLASH_ESCAPES,', ','), ',ANSI_QUOTES,', ','), ',ANSI,', ','))`;

const DATETIME = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)$/;
const isoDateTime = (text: string | null, zone: '' | 'Z'): string | null => {
  if (text === null) return null;
  const match = DATETIME.exec(text);
  if (!match || text.startsWith('0000-00-00')) return text;
  return `${match[1]}T${match[2]}${zone}`;
};

const typeCast: TypeCast = (field, next) => {
  switch (field.type) {
    case 'NEWDECIMAL':
    case 'DECIMAL': {
      const text = field.string();
      return text === null ? null : decimalValue(text);
    }
    case 'DATETIME':
    case 'DATETIME2':
      return isoDateTime(field.string(), '');
    case 'TIMESTAMP':
    case 'TIMESTAMP2':
      return isoDateTime(field.string(), 'Z');
    default:
      return next();
  }
};

const connectionOf = (params: RelationalParams, request: QueryRequest): Connection => {
  try {
    return mysql.createConnection({
      host: params.host,
      port: params.port,
      user: params.user,
      password: params.password,
      ...(params.database === null ? {} : { database: params.database }),
      ...(params.charset === null ? {} : { charset: params.charset }),
      ...(params.tls === null ? {} : { ssl: { rejectUnauthorized: params.tls.rejectUnauthorized !== false } }),
      // The watch ends a slow connect first, with its own message; this is mysql2's own backstop.
      connectTimeout: request.connectTimeoutMs + 1000,
      multipleStatements: false,
      flags: ['-LOCAL_FILES', '-MULTI_STATEMENTS'],
      supportBigNumbers: true,
      bigNumberStrings: false,
      decimalNumbers: false,
      dateStrings: true,
      timezone: 'Z',
      rowsAsArray: true,
      typeCast,
      enableKeepAlive: true,
    });
  } catch (error) {
    // mysql2 checks some options when the connection is made (an unknown charset).
    throw new QueryTargetError('bad_connection', `The connection's fields were refused: ${error instanceof Error ? error.message : String(error)}`);
  }
};

/** One command on the connection, as a promise. */
const run = (connection: Connection, sql: string): Promise<void> =>
  new Promise((resolve, reject) => {
    connection.query(sql, (error) => (error ? reject(error) : resolve()));
  });

const isMariaDb = (connection: Connection): boolean => (connection as unknown as { _isMariaDB?: boolean })._isMariaDB === true;

/** The read-only, UTC session with the server-side statement limit (or without it, on a server that has no such variable). */
const prepareSession = async (connection: Connection, statementTimeoutMs: number): Promise<void> => {
  await run(connection, 'SET SESSION TRANSACTION READ ONLY');
  const limit = isMariaDb(connection) ? `SESSION max_statement_time = ${statementTimeoutMs / 1000}` : `SESSION max_execution_time = ${statementTimeoutMs}`;
  try {
    await run(connection, `SET SESSION time_zone = '+00:00', ${SQL_MODE}, ${limit}`);
  } catch (error) {
    if ((error as QueryError).errno !== UNKNOWN_SYSTEM_VARIABLE) throw error;
    // MySQL before 5.7.8: the client-side watch is the only limit.
    await run(connection, `SET SESSION time_zone = '+00:00', ${SQL_MODE}`);
  }
};

const messageOf = (error: unknown): string => (error instanceof Error ? error.message || error.name : String(error));

const execute = async (params: RelationalParams, request: QueryRequest): Promise<QueryResult> => {
  const connection = connectionOf(params, request);
  // Errors after the outcome is settled (the socket closed under a truncated result) are expected.
  connection.on('error', () => undefined);
  const watch = new QueryWatch(request.signal, () => hardClose(connection));
  let clean = false;
  try {
    watch.connecting(request.connectTimeoutMs);
    try {
      await watch.race(new Promise<void>((resolve, reject) => connection.connect((error) => (error ? reject(error) : resolve()))));
      await watch.race(prepareSession(connection, request.statementTimeoutMs));
    } catch (error) {
      watch.check();
      throw new QueryTargetError('unreachable', `Cannot connect to the target: ${messageOf(error)}`);
    }
    watch.running(request.statementTimeoutMs + SERVER_TIMEOUT_GRACE_MS, request.statementTimeoutMs);
    const streamed = new Promise<{ columns: string[]; rows: unknown[][]; truncated: boolean }>((resolve, reject) => {
      let columns: string[] = [];
      const rows: unknown[][] = [];
      let settled = false;
      const query = connection.query({ sql: request.sql, rowsAsArray: true, typeCast });
      query.on('fields', (fields: FieldPacket[]) => {
        columns = fields.map((field) => field.name);
      });
      query.on('result', (row: unknown) => {
        if (settled) return;
        rows.push((row as unknown[]).map(jsonSafeValue));
        if (rows.length > request.maxRows) {
          // Stop reading now: the rest of the result stays in the server's socket buffer, then dies with the connection.
          settled = true;
          connection.pause();
          rows.length = request.maxRows;
          resolve({ columns, rows, truncated: true });
        }
      });
      query.on('error', (error: unknown) => {
        if (settled) return;
        settled = true;
        reject(error);
      });
      query.on('end', () => {
        if (settled) return;
        settled = true;
        clean = true;
        resolve({ columns, rows, truncated: false });
      });
    });
    const outcome = await watch.race(streamed).catch((error: unknown) => {
      watch.check();
      throw classify(error, request);
    });
    watch.check();
    return { columns: outcome.columns, rows: outcome.rows, row_count: outcome.rows.length, truncated: outcome.truncated };
  } finally {
    watch.dispose();
    if (clean && !watch.failure) connection.end(() => undefined);
    else hardClose(connection);
  }
};

/** mysql2's destroy() only half-closes (a server that never answers would keep the socket): close it both ways. */
const hardClose = (connection: Connection): void => {
  connection.destroy();
  (connection as unknown as { stream?: { destroy(): void } }).stream?.destroy();
};

const classify = (error: unknown, request: QueryRequest): QueryTargetError => {
  if (error instanceof QueryTargetError) return error;
  const { errno, fatal, sqlMessage } = error as Partial<QueryError> & { sqlMessage?: string };
  if (typeof errno === 'number' && TIMEOUT_ERRNOS.has(errno)) return new QueryTargetError('timeout', `The query exceeded ${durationText(request.statementTimeoutMs)} (${sqlMessage ?? messageOf(error)})`);
  if (fatal || typeof sqlMessage !== 'string') return new QueryTargetError('unreachable', `The connection to the target failed: ${messageOf(error)}`);
  return new QueryTargetError('sql', sqlMessage);
};

export const mysqlTarget: QueryTargetFactory = (connection): QueryTarget => {
  const params = relationalParams(connection, 3306);
  return { execute: (request) => execute(params, request) };
};
