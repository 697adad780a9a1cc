import { connect as tcpConnect, type Socket } from 'node:net';
import type pg from 'pg';
import type Cursor from 'pg-cursor';
import { QueryTargetError, type QueryRequest, type QueryResult, type QueryTarget, type QueryTargetFactory } from '../../shared/ports/QueryTarget.ts';
import { AnswerBudget } from '../../shared/query/answerBudget.ts';
import { pgTypeParser } from './pgValues.ts';
import { guardPgClient } from './pgWireGuard.ts';
import { durationText, QueryWatch } from './QueryWatch.ts';
import { relationalParams, type RelationalParams } from './relationalParams.ts';

/**
 * PostgreSQL (spec 4.10, rdb_a) through `pg`: one new connection per request, never pooled (the
 * statement may change session state: set_config, SET via functions, temporary objects, advisory
 * locks), closed when the answer is read.
 *
 * The session is read-only from its first message: the startup packet carries
 * `default_transaction_read_only=on` (so every statement runs in a read-only transaction in
 * autocommit; a set_config turning it off would only last until this connection closes), the
 * statement timeout, and the settings the value conversion relies on (pgValues.ts). A server that
 * reports the setting (PostgreSQL 14+) and did not take it (a pooler that drops startup options) is
 * refused. Rows come through a cursor (a portal read with one Execute of maxRows + 1 rows): the
 * server stops producing at the cap, nothing beyond it is read.
 *
 * Bytes are bounded too (QUERY_MAX_BYTES, shared/query/answerBudget.ts): each row is offered to the
 * answer's budget as pg parses it, and past the bound the read stops there (the backend is cancelled
 * and the socket cut). Under pg, the wire guard (pgWireGuard.ts) cuts any row larger than the bound
 * before pg sees it, so pg never builds a string of that size (a 600 MB value made it throw
 * ERR_STRING_TOO_LONG in its socket handler, which ended the process), and turns anything pg throws
 * while parsing into a 502 for this request.
 */

const SESSION_OPTIONS = (statementTimeoutMs: number): string =>
  [
    'default_transaction_read_only=on',
    `statement_timeout=${statementTimeoutMs}`,
    // The lexer of the statement check reads '...' as standard strings (shared/query/checkStatement.ts).
    'standard_conforming_strings=on',
    'TimeZone=UTC',
    'DateStyle=ISO',
    'IntervalStyle=iso_8601',
    'bytea_output=hex',
  ]
    .map((setting) => `-c ${setting}`)
    .join(' ');

/** Settings the server reports back (ParameterStatus) whose value must be this one when reported. */
const EXPECTED_REPORTS: ReadonlyArray<[string, string]> = [
  ['default_transaction_read_only', 'on'],
  ['standard_conforming_strings', 'on'],
  // pg-protocol's startup packet asks for UTF8 and pg writes the statement in UTF-8: a server that
  // reads it in another encoding (SJIS, BIG5: a pooler that drops startup options, the role's
  // default then) could see quotes and backslashes the check did not.
  ['client_encoding', 'UTF8'],
];

/** How long past statementTimeoutMs the client waits for the server's own timeout before it cuts the connection. */
const SERVER_TIMEOUT_GRACE_MS = 2000;

/** How long a truncated result's portal close may take before the connection is simply cut. */
const CLOSE_WAIT_MS = 1000;

const TYPES = { getTypeParser: pgTypeParser } as unknown as pg.CustomTypesConfig;

/** SQLSTATE classes and codes that mean the server or the connection failed rather than the statement. */
const isConnectionFailure = (code: string): boolean =>
  code.startsWith('08') || code.startsWith('28') || code === '3D000' || code === '53300' || code === '57P01' || code === '57P02' || code === '57P03';

/**
 * A cancel request (PostgreSQL protocol: its own connection, 16 bytes) for the backend still running
 * a statement the client gave up on: closing the socket alone leaves it running until it next writes.
 */
const sendCancel = (params: RelationalParams, processId: number, secretKey: number): void => {
  const socket: Socket = tcpConnect({ host: params.host, port: params.port });
  const message = Buffer.alloc(16);
  message.writeInt32BE(16, 0);
  message.writeInt32BE(80877102, 4);
  message.writeInt32BE(processId, 8);
  message.writeInt32BE(secretKey, 12);
  socket.setTimeout(5000, () => socket.destroy());
  socket.once('connect', () => socket.end(message));
  socket.on('error', () => socket.destroy());
};

interface PgInternals {
  connection: { stream: Socket; on(event: 'parameterStatus', listener: (message: { parameterName: string; parameterValue: string }) => void): void };
  processID: number | null;
  secretKey: number | null;
}

interface PgDriver {
  pg: typeof pg;
  Cursor: typeof Cursor;
}
let pgDriver: PgDriver | undefined;
/** pg and pg-cursor, imported at the first PostgreSQL statement rather than at every start. */
const loadPgDriver = async (): Promise<PgDriver> => (pgDriver ??= { pg: (await import('pg')).default, Cursor: (await import('pg-cursor')).default });

const execute = async (params: RelationalParams, request: QueryRequest): Promise<QueryResult> => {
  const driver = await loadPgDriver();
  const client = new driver.pg.Client({
    host: params.host,
    port: params.port,
    user: params.user,
    // A function: a plain empty password would let pg fall back to PGPASSWORD and ~/.pgpass, the service's own.
    password: () => params.password,
    database: params.database ?? params.user,
    ssl: params.tls ?? false,
    options: SESSION_OPTIONS(request.statementTimeoutMs),
    application_name: 'pipeline-orchestrator query',
    // The watch below ends a slow connect first, with its own message; this is pg's own backstop.
    connectionTimeoutMillis: request.connectTimeoutMs + 1000,
    keepAlive: true,
    types: TYPES,
  });
  const internals = client as unknown as PgInternals;
  // Socket errors after a failure are reported through the pending call; unheard, they would crash the process.
  client.on('error', () => undefined);
  const reported = new Map<string, string>();
  internals.connection.on('parameterStatus', (message) => reported.set(message.parameterName, message.parameterValue));
  let connected = false;
  /** The read stopped in the middle of the result (the byte bound): the session cannot be ended cleanly. */
  let cutShort = false;
  const watch = new QueryWatch(request.signal, (reason) => {
    if (reason !== 'connect' && internals.processID !== null && internals.secretKey !== null) sendCancel(params, internals.processID, internals.secretKey);
    internals.connection.stream.destroy();
  });
  let onCut = (): void => undefined;
  const wire = guardPgClient(client, request.maxBytes, {
    onCut: () => onCut(),
    onFailure: (error) => watch.fail(new QueryTargetError('unreachable', `The connection to the target failed: ${messageOf(error)}`)),
  });
  try {
    watch.connecting(request.connectTimeoutMs);
    try {
      await watch.race(client.connect());
    } catch (error) {
      watch.check();
      throw new QueryTargetError('unreachable', `Cannot connect to the target: ${messageOf(error)}`);
    }
    connected = true;
    for (const [name, value] of EXPECTED_REPORTS) {
      const actual = reported.get(name);
      if (actual !== undefined && actual !== value) {
        throw new QueryTargetError('unreachable', `The target did not open the session with ${name}=${value} (it reports ${actual}; a connection pooler that drops startup options?)`);
      }
    }
    watch.running(request.statementTimeoutMs + SERVER_TIMEOUT_GRACE_MS, request.statementTimeoutMs);
    const budget = new AnswerBudget(request);
    let columns: string[] = [];
    const cursor = client.query(new driver.Cursor<unknown[]>(request.sql, undefined, { rowMode: 'array', types: TYPES }));
    try {
      await watch.race(
        new Promise<void>((resolve, reject) => {
          const stopHere = () => {
            cutShort = true;
            wire.guard?.stop();
            resolve();
          };
          // Rows one by one, as pg parses them: the bound is checked before the next one is read.
          cursor.on('row', (row: unknown[], result: pg.Result) => {
            if (budget.truncated) return;
            if (budget.rows.length === 0) {
              columns = result.fields.map((field) => field.name);
              budget.setColumns(columns);
            }
            if (!budget.offer(row) && budget.stoppedBy === 'bytes') stopHere();
          });
          // The guard cut a row larger than the bound (offered above): the read ends after it.
          onCut = () => {
            budget.stop();
            stopHere();
          };
          cursor.read(request.maxRows + 1, (error, _rows, result) => {
            if (error) return reject(error);
            if (budget.rows.length === 0) columns = (result.fields ?? []).map((field) => field.name);
            resolve();
          });
        }),
      );
    } catch (error) {
      watch.check();
      throw classify(error, request, driver);
    }
    if (budget.stoppedBy === 'rows') {
      // The portal is suspended, not finished: close it (the server stops producing there) so that
      // the session ends cleanly; a server slow to confirm is cut off below instead.
      await Promise.race([cursor.close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref())]);
    }
    watch.check();
    return budget.answer(columns);
  } finally {
    watch.dispose();
    wire.guard?.stop();
    if (connected && !watch.failure && !cutShort) {
      void client.end().catch(() => undefined);
    } else {
      // Mid-result (or broken): the backend may still be producing; cancel it, then cut the socket.
      if (connected && internals.processID !== null && internals.secretKey !== null && !watch.failure) sendCancel(params, internals.processID, internals.secretKey);
      internals.connection.stream.destroy();
    }
  }
};

const messageOf = (error: unknown): string => (error instanceof Error ? error.message || error.name : String(error));

/** A failure while the statement ran: the database's own message for SQL errors (400), 504 for its statement timeout, 502 when the connection broke. */
const classify = (error: unknown, request: QueryRequest, { pg }: PgDriver): QueryTargetError => {
  if (error instanceof QueryTargetError) return error;
  const code = (error as { code?: unknown }).code;
  if (error instanceof pg.DatabaseError && typeof code === 'string') {
    // 57014: canceled, here only by statement_timeout (the client's own cancels are reported by the watch).
    if (code === '57014') return new QueryTargetError('timeout', `The query exceeded ${durationText(request.statementTimeoutMs)} (${error.message})`);
    if (isConnectionFailure(code)) return new QueryTargetError('unreachable', `The target closed the session: ${error.message}`);
    return new QueryTargetError('sql', error.message);
  }
  return new QueryTargetError('unreachable', `The connection to the target failed: ${messageOf(error)}`);
};

export const postgresTarget: QueryTargetFactory = (connection): QueryTarget => {
  const params = relationalParams(connection, 5432);
  return { execute: (request) => execute(params, request) };
};
