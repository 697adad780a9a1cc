import type mysql from 'mysql2';
import type { Connection, FieldPacket, QueryError, RowDataPacket, TypeCast } from 'mysql2';
import { QueryTargetError, type QueryRequest, type QueryResult, type QueryTarget, type QueryTargetFactory } from '../../shared/ports/QueryTarget.ts';
import { AnswerBudget } from '../../shared/query/answerBudget.ts';
import { decimalValue, jsonSafeValue } from '../../shared/query/jsonSafeValue.ts';
import { guardMysqlConnection } from './mysqlWireGuard.ts';
import { durationText, QueryWatch } from './QueryWatch.ts';
import { relationalParams, type RelationalParams } from './relationalParams.ts';
import { splitCut } from './wireGuard.ts';

/**
 * MySQL and MariaDB (spec 4.10, rdb_b) through `mysql2`: one new connection per request, never
 * pooled (user SQL can change session state: user variables, GET_LOCK, temporary tables), closed
 * when the answer is read.
 *
 * Before the statement the session is made read-only (`SET SESSION TRANSACTION READ ONLY`: every
 * autocommit statement runs in a read-only transaction), in UTC, with the server-side statement
 * limit (MariaDB max_statement_time, MySQL max_execution_time), and read the way the statement check
 * lexes (shared/query/checkStatement.ts), which the session then reports back before anything of the
 * caller's is sent (else 502):
 *  - utf8mb4 on both sides, whatever the connection's `charset` says (handshake and SET NAMES): the
 *    check reads characters, the server bytes, and in big5, sjis, gbk, cp932 or gb18030 a character's
 *    trail byte can be 0x5C, which the server may read as a backslash where the check saw none (a
 *    string that ends elsewhere for the server: `SELECT 'Ě' , ' INTO OUTFILE ...` wrote a file). The
 *    driver gives JavaScript strings either way, so nothing is lost; `charset` must still name a
 *    character set MySQL knows;
 *  - sql_mode without NO_BACKSLASH_ESCAPES, ANSI_QUOTES, nor the modes that imply ANSI_QUOTES (ANSI,
 *    and MariaDB's ORACLE, MSSQL, DB2, POSTGRESQL, MAXDB).
 * LOAD DATA LOCAL is off (a server cannot ask for the service's files), one statement per call.
 * Rows are streamed (`result` events) through the answer's budget (maxRows + 1 rows, QUERY_MAX_BYTES:
 * shared/query/answerBudget.ts); where it stops them the connection stops reading and is closed, so
 * the rest of the result is never read into memory (the server stops at its next write). The wire
 * guard (mysqlWireGuard.ts) cuts a row larger than the bound before mysql2 assembles it.
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

/** Modes that change how '...' and "..." are read; the others imply ANSI_QUOTES (MariaDB keeps them as names in sql_mode). */
const LEXING_MODES = ['NO_BACKSLASH_ESCAPES', 'ANSI_QUOTES', 'ANSI', 'ORACLE', 'MSSQL', 'DB2', 'POSTGRESQL', 'MAXDB'];
/** sql_mode without LEXING_MODES, the rest as the server has it. */
const SQL_MODE = `SESSION sql_mode = TRIM(BOTH ',' FROM ${LEXING_MODES.reduce((mode, name) => `REPLACE(${mode}, ',${name},', ',')`, "CONCAT(',', @@SESSION.sql_mode, ',')")})`;
/** The handshake's character set (mysql2 then writes the statement in UTF-8); SET NAMES makes sure of the server's side. */
const SESSION_CHARSET = 'UTF8MB4_GENERAL_CI';
let mysqlDriver: typeof mysql | undefined;
/** mysql2, imported at the first MySQL statement rather than at every start. */
const loadMysqlDriver = async (): Promise<typeof mysql> => (mysqlDriver ??= (await import('mysql2')).default);

/** Character sets and collations mysql2 knows (a connection's `charset` must name one); exported untyped. */
const knownCharsets = (driver: typeof mysql): Readonly<Record<string, number>> => (driver as unknown as { Charsets: Readonly<Record<string, number>> }).Charsets;

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
    case 'JSON': {
      // mysql2 would JSON.parse it and throw on a value the wire guard cut (or a hostile server's junk).
      const text = field.string('utf8');
      if (text === null) return null;
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return text;
      }
    }
    default:
      return next();
  }
};

const connectionOf = (driver: typeof mysql, params: RelationalParams, request: QueryRequest): Connection => {
  if (params.charset !== null && knownCharsets(driver)[params.charset.toUpperCase()] === undefined) {
    throw new QueryTargetError('bad_connection', `The connection's fields were refused: unknown charset ${JSON.stringify(params.charset.slice(0, 64))}`);
  }
  try {
    return driver.createConnection({
      host: params.host,
      port: params.port,
      user: params.user,
      password: params.password,
      ...(params.database === null ? {} : { database: params.database }),
      charset: SESSION_CHARSET,
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

/** One row of a query the target makes itself. */
const row = (connection: Connection, sql: string): Promise<unknown[]> =>
  new Promise((resolve, reject) => {
    connection.query({ sql, rowsAsArray: true }, (error, rows) => (error ? reject(error) : resolve(((rows as RowDataPacket[])[0] as unknown as unknown[] | undefined) ?? [])));
  });

/**
 * The read-only, UTC, utf8mb4 session with the server-side statement limit (or without it, on a
 * server that has no such variable), checked as the server reports it: a server that did not take
 * the character set or the sql_mode (skip-character-set-client-handshake does not stop SET NAMES,
 * but a proxy might) is refused rather than sent a statement the check read otherwise.
 */
const prepareSession = async (connection: Connection, statementTimeoutMs: number): Promise<void> => {
  await run(connection, 'SET SESSION TRANSACTION READ ONLY');
  const limit = isMariaDb(connection) ? `SESSION max_statement_time = ${statementTimeoutMs / 1000}` : `SESSION max_execution_time = ${statementTimeoutMs}`;
  const settings = `SET NAMES utf8mb4, SESSION time_zone = '+00:00', ${SQL_MODE}`;
  try {
    await run(connection, `${settings}, ${limit}`);
  } catch (error) {
    if ((error as QueryError).errno !== UNKNOWN_SYSTEM_VARIABLE) throw error;
    // MySQL before 5.7.8: the client-side watch is the only limit.
    await run(connection, settings);
  }
  const [mode, client, connectionCharset] = (await row(connection, 'SELECT @@SESSION.sql_mode, @@SESSION.character_set_client, @@SESSION.character_set_connection')).map(String);
  const lexing = (mode ?? '').split(',').filter((name) => LEXING_MODES.includes(name));
  if (client !== 'utf8mb4' || connectionCharset !== 'utf8mb4' || lexing.length > 0) {
    throw new Error(`the session did not take utf8mb4 and the default quoting (character_set_client ${client}, character_set_connection ${connectionCharset}, sql_mode ${mode})`);
  }
};

const messageOf = (error: unknown): string => (error instanceof Error ? error.message || error.name : String(error));

const execute = async (params: RelationalParams, request: QueryRequest): Promise<QueryResult> => {
  const connection = connectionOf(await loadMysqlDriver(), params, request);
  // Errors after the outcome is settled (the socket closed under a truncated result) are expected.
  connection.on('error', () => undefined);
  const watch = new QueryWatch(request.signal, () => hardClose(connection));
  let onCut = (): void => undefined;
  const wire = guardMysqlConnection(connection, request.maxBytes, {
    onCut: () => onCut(),
    onFailure: (error) => watch.fail(new QueryTargetError('unreachable', `The connection to the target failed: ${messageOf(error)}`)),
  });
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
    const budget = new AnswerBudget(request);
    let columns: string[] = [];
    const streamed = new Promise<void>((resolve, reject) => {
      let settled = false;
      const stopHere = () => {
        // Stop reading now: the rest of the result stays in the server's socket buffer, then dies with the connection.
        settled = true;
        wire.stop();
        resolve();
      };
      const query = connection.query({ sql: request.sql, rowsAsArray: true, typeCast });
      query.on('fields', (fields: FieldPacket[]) => {
        columns = fields.map((field) => field.name);
        budget.setColumns(columns);
      });
      query.on('result', (row: unknown) => {
        if (settled) return;
        if (!budget.offer((row as unknown[]).map(answerValue))) stopHere();
      });
      // The guard cut a row larger than the bound (offered above): the read ends after it.
      onCut = () => {
        if (settled) return;
        budget.stop();
        stopHere();
      };
      query.on('error', (error: unknown) => {
        if (settled) return;
        settled = true;
        reject(error);
      });
      query.on('end', () => {
        if (settled) return;
        settled = true;
        clean = true;
        resolve();
      });
    });
    await watch.race(streamed).catch((error: unknown) => {
      watch.check();
      throw classify(error, request);
    });
    watch.check();
    return budget.answer(columns);
  } finally {
    watch.dispose();
    wire.stop();
    if (clean && !watch.failure) connection.end(() => undefined);
    else hardClose(connection);
  }
};

/** A value as the answer holds it (jsonSafeValue), a binary value the guard cut as base64 of what was kept, then the marker. */
const answerValue = (value: unknown): unknown => {
  const cut = value instanceof Uint8Array ? splitCut(value) : null;
  return cut === null ? jsonSafeValue(value) : `${cut.kept.toString('base64')}${cut.marker}`;
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
