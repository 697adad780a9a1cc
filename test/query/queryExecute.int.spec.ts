import { expect } from 'chai';
import { createServer, type Server, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type mysql from 'mysql2/promise';
import { startTestService, type TestService } from '../support/testService.ts';
import { waitUntil } from '../support/waitUntil.ts';
import { catalogClient, createUser, type CatalogClient } from '../support/catalogFixture.ts';
import { HttpClient, type Reply } from '../support/HttpClient.ts';
import { MARIADB, POSTGRES, mariadbConnection, postgresClient, requireDatabase } from '../support/databases.ts';

/**
 * POST /api/v1/query/execute (spec 4.10) against the real PostgreSQL and MariaDB (CI starts both;
 * test/support/databases.ts). The service runs with a 2 s statement limit and a 1 s connect limit
 * so that the timeout cases are quick; one case runs the defaults (10 s connect limit).
 */

const PATH = '/api/v1/query/execute';
interface QueryAnswer {
  columns: string[];
  rows: unknown[][];
  row_count: number;
  truncated: boolean;
}

/** A TCP server that accepts connections and never says a word. */
const silentServer = async (): Promise<{ server: Server; port: number; close(): Promise<void> }> => {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    server,
    port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};

describe('POST /api/v1/query/execute (spec 4.10) against PostgreSQL and MariaDB', function () {
  this.timeout(60_000);
  const suffix = randomBytes(4).toString('hex');
  const table = `qd_rows_${suffix}`;
  const writer = `qd_write_${suffix}`;
  let svc: TestService;
  let admin: CatalogClient;
  let token: string;
  let folder: string;
  let direct: pg.Client;
  let maria: mysql.Connection;
  const connections: Record<string, string> = {};

  const query = (body: unknown, options: { token?: string; client?: HttpClient } = {}): Promise<Reply> =>
    (options.client ?? svc.client()).post(PATH, { json: body, ...(options.client ? {} : { token: options.token ?? token }) });
  const ok = async (connection: string, sql: string): Promise<QueryAnswer> => {
    const reply = await query({ connection_laui: connections[connection], sql });
    expect(reply.status, reply.text).to.equal(200);
    return reply.json as QueryAnswer;
  };
  const failing = async (connection: string, sql: string, status: number): Promise<string> => {
    const reply = await query({ connection_laui: connections[connection], sql });
    expect(reply.status, reply.text).to.equal(status);
    return (reply.json as { detail: string }).detail;
  };
  const connectionItem = (item_type: string, name: string, content: unknown) => admin.createOk({ item_type, name, parent_laui: folder, content });

  before(async function () {
    await requireDatabase(this, 'postgresql');
    await requireDatabase(this, 'mariadb');
    direct = await postgresClient();
    await direct.query(`CREATE TABLE ${table} (id int PRIMARY KEY, label text)`);
    await direct.query(`CREATE FUNCTION ${writer}() RETURNS int LANGUAGE sql AS $$ INSERT INTO ${table} VALUES (1000000, 'written') RETURNING 1 $$`);
    await direct.query(`INSERT INTO ${table} SELECT g, 'row ' || g FROM generate_series(1, 3) g`);
    maria = await mariadbConnection();
    await maria.query(`CREATE TABLE ${table} (id INT PRIMARY KEY, label TEXT)`);
    await maria.query(`CREATE FUNCTION ${writer}() RETURNS INT MODIFIES SQL DATA BEGIN INSERT INTO ${table} VALUES (1000000, 'written'); RETURN 1; END`);
    await maria.query(`INSERT INTO ${table} VALUES (1, 'row 1'), (2, 'row 2')`);

    svc = await startTestService({ QUERY_TIMEOUT_SECONDS: '2', QUERY_CONNECT_TIMEOUT_SECONDS: '1', WORKER_POOL_SIZE: '0' });
    token = (await svc.login()).token;
    admin = catalogClient(svc, token);
    const tree = await admin.bootstrap('query-co');
    folder = tree.folders.connection;
    // Synonyms (spec 4.10 table): each connection spells its fields differently.
    connections.pg = await connectionItem('connection.postgresql', 'pg', { hostname: POSTGRES.host, db_port: String(POSTGRES.port), dbname: POSTGRES.database, usr: POSTGRES.user });
    connections.pgPrefixed = await connectionItem('connection.postgres', 'pg-prefixed', { postgresql_server: POSTGRES.host, pg_port: POSTGRES.port, postgres_db: POSTGRES.database, pg_login: POSTGRES.user, Password: '' });
    connections.maria = await connectionItem('connection.mariadb', 'maria', { mysql_host: MARIADB.host, mysql_port: MARIADB.port, mysql_user: MARIADB.user, mysql_password: MARIADB.password, db_name: MARIADB.database, charset: 'utf8mb4' });
    connections.mariaPlain = await connectionItem('connection.mysql', 'maria-plain', { server: MARIADB.host, login: MARIADB.user, schema: MARIADB.database });
  });
  after(async () => {
    await svc?.stop();
    await direct?.query(`DROP FUNCTION IF EXISTS ${writer}()`).catch(() => undefined);
    await direct?.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
    await direct?.end();
    await maria?.query(`DROP FUNCTION IF EXISTS ${writer}`).catch(() => undefined);
    await maria?.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
    await maria?.end();
  });

  describe('given a connection spelled with synonyms and provider prefixes', () => {
    it('when PostgreSQL is queried through either, then 200 with columns, rows, row_count and truncated false', async () => {
      for (const connection of ['pg', 'pgPrefixed']) {
        const answer = await ok(connection, `SELECT id, label FROM ${table} ORDER BY id`);
        expect(answer).to.deep.equal({ columns: ['id', 'label'], rows: [[1, 'row 1'], [2, 'row 2'], [3, 'row 3']], row_count: 3, truncated: false });
      }
    });
    it('when MariaDB is queried through either, then 200 with the same shape', async () => {
      for (const connection of ['maria', 'mariaPlain']) {
        const answer = await ok(connection, `SELECT id, label FROM ${table} ORDER BY id;`);
        expect(answer).to.deep.equal({ columns: ['id', 'label'], rows: [[1, 'row 1'], [2, 'row 2']], row_count: 2, truncated: false });
      }
    });
    it('when WITH and EXPLAIN run, and keywords stand inside literals and comments, then 200', async () => {
      expect((await ok('pg', `WITH t AS (SELECT 'DELETE FROM x' AS s) SELECT s /* DROP */ FROM t`)).rows).to.deep.equal([['DELETE FROM x']]);
      expect((await ok('pg', `EXPLAIN SELECT * FROM ${table}`)).columns).to.deep.equal(['QUERY PLAN']);
      expect((await ok('maria', `SELECT 'it\\'s an UPDATE' AS s -- GRANT`)).rows).to.deep.equal([["it's an UPDATE"]]);
      expect((await ok('maria', `EXPLAIN SELECT * FROM ${table}`)).row_count).to.be.greaterThan(0);
    });
    it('when values of every kind come back, then they are JSON-safe as documented', async () => {
      const pgAnswer = await ok(
        'pg',
        `SELECT 9007199254740993::int8 AS big, 42::int8 AS small, 12.50::numeric AS num, 'NaN'::float8 AS nan, '2024-05-01 12:00:00.123456+02'::timestamptz AS tz,
                '2024-05-01 12:00:00'::timestamp AS ts, '2024-05-01'::date AS d, '\\x00ff'::bytea AS bin, '{"a":[1]}'::jsonb AS j, ARRAY[1, NULL]::int4[] AS arr, interval '1 day 2 hours' AS i, NULL AS nothing`,
      );
      expect(pgAnswer.rows[0]).to.deep.equal(['9007199254740993', 42, 12.5, 'NaN', '2024-05-01T10:00:00.123456Z', '2024-05-01T12:00:00', '2024-05-01', 'AP8=', { a: [1] }, [1, null], 'P1DT2H', null]);
      const mariaAnswer = await ok(
        'maria',
        `SELECT 9007199254740993 AS big, CAST(12.50 AS DECIMAL(10,2)) AS num, CAST('2024-05-01 12:00:00.5' AS DATETIME(1)) AS dt, FROM_UNIXTIME(0) + INTERVAL 0 SECOND AS t0, DATE('2024-05-01') AS d, X'00FF' AS bin, NULL AS nothing`,
      );
      expect(mariaAnswer.rows[0]).to.deep.equal(['9007199254740993', 12.5, '2024-05-01T12:00:00.5', '1970-01-01T00:00:00', '2024-05-01', 'AP8=', null]);
    });
  });

  describe('given authentication (spec 5.2: Bearer or the browser cookies)', () => {
    const sql = 'SELECT 1 AS one';
    it('when no token and no cookie, or a bad one, then 401', async () => {
      const anonymous = await svc.client().post(PATH, { json: { connection_laui: connections.pg, sql } });
      expect(anonymous.status).to.equal(401);
      expect(anonymous.json).to.deep.equal({ detail: 'User not authenticated' });
      expect((await query({ connection_laui: connections.pg, sql }, { token: `${token}x` })).status).to.equal(401);
      const badCookie = svc.client();
      badCookie.jar.set('frontend_token', 'nope');
      expect((await query({ connection_laui: connections.pg, sql }, { client: badCookie })).status).to.equal(401);
    });
    it('when only the frontend_token cookie, or only the session cookie, is sent, then 200', async () => {
      const browser = (await svc.login()).client;
      for (const name of ['frontend_token', 'session']) {
        const only = svc.client();
        only.jar.set(name, browser.jar.get(name) ?? '');
        const reply = await query({ connection_laui: connections.pg, sql }, { client: only });
        expect(reply.status, `${name}: ${reply.text}`).to.equal(200);
        expect((reply.json as QueryAnswer).rows).to.deep.equal([[1]]);
      }
    });
  });

  describe('given a bad body or connection', () => {
    it('when a field is missing, of the wrong type, or the body is not an object, then 422 in the list form', async () => {
      const missing = await query({ connection_laui: connections.pg });
      expect(missing.status).to.equal(422);
      expect(missing.json).to.deep.equal({ detail: [{ type: 'missing', loc: ['body', 'sql'], msg: 'Field required', input: { connection_laui: connections.pg } }] });
      const badLaui = await query({ connection_laui: 'nope', sql: 'SELECT 1' });
      expect(badLaui.status).to.equal(422);
      expect((badLaui.json as { detail: Array<{ msg: string }> }).detail[0]?.msg).to.equal('Invalid ObjectId');
      expect((await query({ connection_laui: connections.pg, sql: 5 })).status).to.equal(422);
      expect((await query(['SELECT 1'])).status).to.equal(422);
    });
    it('when the connection does not exist, is not a connection, is deleted, or the caller cannot VIEW it, then the same 404', async () => {
      const unknown = 'aaaaaaaaaaaaaaaaaaaaaaaa';
      const notFound = await query({ connection_laui: unknown, sql: 'SELECT 1' });
      expect(notFound.status).to.equal(404);
      expect(notFound.json).to.deep.equal({ detail: `Item not found with laui: ${unknown}` });
      expect((await query({ connection_laui: folder, sql: 'SELECT 1' })).json).to.deep.equal({ detail: `Item not found with laui: ${folder}` });
      const doomed = await connectionItem('connection.postgresql', 'doomed', { host: POSTGRES.host, user: POSTGRES.user, database: POSTGRES.database });
      expect((await admin.post('/delete', { item_laui: doomed, hard_delete: false })).status).to.equal(200);
      expect((await query({ connection_laui: doomed, sql: 'SELECT 1' })).status).to.equal(404);
      const stranger = await createUser(svc, token, `stranger-${suffix}`);
      const hidden = await query({ connection_laui: connections.pg, sql: 'SELECT 1' }, { token: stranger.token });
      expect(hidden.status).to.equal(404);
      expect(hidden.json).to.deep.equal({ detail: `Item not found with laui: ${connections.pg}` });
      // Granted VIEW, the same user may query it.
      expect((await admin.post('/update', { item_laui: connections.pg, access_patch: { add: { viewers: { [stranger.laui]: 'true' } } } })).status).to.equal(200);
      expect((await query({ connection_laui: connections.pg, sql: 'SELECT 1' }, { token: stranger.token })).status).to.equal(200);
    });
    it('when required fields are missing, then 400 lists the keys found and never a value', async () => {
      const broken = await connectionItem('connection.postgresql', 'broken', { hostname_typo: 'db.internal', pwd: 'hunter2-secret' });
      const reply = await query({ connection_laui: broken, sql: 'SELECT 1' });
      expect(reply.status).to.equal(400);
      expect(reply.json).to.deep.equal({ detail: 'Connection content lacks required fields: host, user (keys found: hostname_typo, pwd)' });
      expect(reply.text).to.not.include('hunter2');
      const generic = await connectionItem('connection', 'generic', { host: 'h' });
      expect((await query({ connection_laui: generic, sql: 'SELECT 1' })).status).to.equal(400);
    });
  });

  describe('given SQL the spec refuses or the database rejects', () => {
    it('when it is not SELECT/WITH/EXPLAIN, holds a blocked keyword, INTO or a second statement, then 400 before any connection', async () => {
      expect(await failing('pg', 'SHOW server_version', 400)).to.equal('Only SELECT, WITH or EXPLAIN statements are allowed');
      expect(await failing('pg', `WITH d AS (DELETE FROM ${table} RETURNING *) SELECT * FROM d`, 400)).to.equal('Blocked keyword: DELETE');
      expect(await failing('pg', `SELECT * INTO qd_copy_${suffix} FROM ${table}`, 400)).to.match(/^SELECT \.\.\. INTO is not allowed/);
      expect(await failing('maria', `SELECT * FROM ${table} INTO OUTFILE '/tmp/qd-${suffix}'`, 400)).to.match(/^SELECT \.\.\. INTO is not allowed/);
      expect(await failing('maria', 'SELECT 1; SELECT 2', 400)).to.equal('Only one statement is allowed');
      // MySQL runs what a /*! comment holds; PostgreSQL does not.
      expect(await failing('maria', 'SELECT 1 /*! DROP */', 400)).to.equal('Blocked keyword: DROP');
      expect((await ok('pg', 'SELECT 1 /*! DROP */')).rows).to.deep.equal([[1]]);
    });
    it('when the SQL has a syntax or runtime error, then 400 with the database message', async () => {
      expect(await failing('pg', 'SELECT FROM WHERE', 400)).to.match(/syntax error/);
      expect(await failing('pg', 'SELECT 1 / 0', 400)).to.equal('division by zero');
      expect(await failing('maria', 'SELECT nope', 400)).to.match(/Unknown column 'nope'/);
    });
  });

  describe('given read-only sessions', () => {
    it('when a SELECT calls a function that writes, then 400 read-only transaction and nothing is written (PostgreSQL and MariaDB)', async () => {
      expect(await failing('pg', `SELECT ${writer}()`, 400)).to.match(/read-only transaction/);
      expect(await failing('maria', `SELECT ${writer}()`, 400)).to.match(/READ ONLY transaction/);
      expect((await direct.query(`SELECT count(*)::int AS n FROM ${table} WHERE id = 1000000`)).rows[0]).to.deep.equal({ n: 0 });
      const [rows] = await maria.query(`SELECT COUNT(*) AS n FROM ${table} WHERE id = 1000000`);
      expect(rows).to.deep.equal([{ n: 0 }]);
    });
    it('when a request turns default_transaction_read_only off, then the next request is read-only again (never pooled)', async () => {
      expect((await ok('pg', "SELECT set_config('default_transaction_read_only', 'off', false)")).rows).to.deep.equal([['off']]);
      expect(await failing('pg', `SELECT ${writer}()`, 400)).to.match(/read-only transaction/);
      const pids = [(await ok('pg', 'SELECT pg_backend_pid()')).rows[0]?.[0], (await ok('pg', 'SELECT pg_backend_pid()')).rows[0]?.[0]];
      expect(pids[0]).to.not.equal(pids[1]);
      expect((await direct.query(`SELECT count(*)::int AS n FROM ${table} WHERE id = 1000000`)).rows[0]).to.deep.equal({ n: 0 });
    });
    it('when requests are done, then no session of the service stays open on the server', async () => {
      await ok('pg', 'SELECT 1');
      const deadline = Date.now() + 5000;
      let open = -1;
      while (Date.now() < deadline) {
        open = (await direct.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'pipeline-orchestrator query'")).rows[0].n as number;
        if (open === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(open).to.equal(0);
    });
  });

  describe('given results beyond 10,000 rows', () => {
    it('when exactly 10,000 rows come back, then truncated is false; 10,001, true with 10,000 rows', async () => {
      const exact = await ok('pg', 'SELECT generate_series(1, 10000) AS n');
      expect([exact.row_count, exact.truncated, exact.rows.length]).to.deep.equal([10_000, false, 10_000]);
      const over = await ok('pg', 'SELECT generate_series(1, 10001) AS n');
      expect([over.row_count, over.truncated, over.rows.length, over.rows.at(-1)]).to.deep.equal([10_000, true, 10_000, [10_000]]);
    });
    it('when a query would return 100,000,000 rows, then 10,000 come back at once, truncated, with bounded memory (PostgreSQL and MariaDB)', async () => {
      const before = process.memoryUsage().rss;
      const pgAnswer = await ok('pg', "SELECT generate_series(1, 100000000) AS n, repeat('x', 100) AS pad");
      expect([pgAnswer.row_count, pgAnswer.truncated]).to.deep.equal([10_000, true]);
      const mariaAnswer = await ok('maria', 'SELECT seq FROM seq_1_to_100000000');
      expect([mariaAnswer.row_count, mariaAnswer.truncated]).to.deep.equal([10_000, true]);
      // Reading all of it would take gigabytes (and minutes: the test's timeout would end it).
      expect(process.memoryUsage().rss - before).to.be.lessThan(100 * 1024 * 1024);
    });
  });

  describe('given an unreachable target or a slow statement', () => {
    let silent: Awaited<ReturnType<typeof silentServer>>;
    before(async () => {
      silent = await silentServer();
      connections.refused = await connectionItem('connection.postgresql', 'refused', { host: '127.0.0.1', port: 1, user: 'x' });
      connections.mariaRefused = await connectionItem('connection.mysql', 'maria-refused', { host: '127.0.0.1', port: 1, user: 'x' });
      connections.silent = await connectionItem('connection.postgresql', 'silent', { host: '127.0.0.1', port: silent.port, user: 'x' });
      connections.mariaSilent = await connectionItem('connection.mysql', 'maria-silent', { host: '127.0.0.1', port: silent.port, user: 'x' });
      connections.badUser = await connectionItem('connection.postgresql', 'bad-user', { host: POSTGRES.host, user: `nobody_${suffix}` });
      connections.badPassword = await connectionItem('connection.mysql', 'bad-password', { host: MARIADB.host, user: MARIADB.user, password: 'wrong-password' });
    });
    after(async () => silent?.close());

    it('when the port refuses, or the credentials are wrong, then 502 at once', async () => {
      // "At once": the refusal's own cause, not the connect limit's "within 1 s" (which would say so).
      for (const connection of ['refused', 'mariaRefused', 'badUser', 'badPassword']) {
        const detail = await failing(connection, 'SELECT 1', 502);
        expect(detail, connection).to.match(/^Cannot connect to the target: /);
      }
    });
    it('when the server accepts the connection and never answers, then 502 after the connect limit (1 s here)', async () => {
      for (const connection of ['silent', 'mariaSilent']) {
        const started = Date.now();
        expect(await failing(connection, 'SELECT 1', 502)).to.equal('Could not connect to the target within 1 s');
        // Not before the limit: a lower bound only (a slower machine only makes it longer).
        expect(Date.now() - started).to.be.at.least(900);
      }
    });
    it('when the statement runs past the limit (2 s here), then 504 and the server stops it', async () => {
      expect(await failing('pg', 'SELECT pg_sleep(30)', 504)).to.match(/^The query exceeded 2 s/);
      expect(await failing('maria', 'SELECT SLEEP(30)', 504)).to.match(/^The query exceeded 2 s/);
      const running = await direct.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(30)%' AND state = 'active'");
      expect(running.rows[0]).to.deep.equal({ n: 0 });
    });
    it('when the client leaves during a statement, then the server-side statement is cancelled', async function () {
      this.timeout(180_000);
      // A service whose statement limit is an hour, and a statement of an hour: only the client's leaving
      // can end it within the waits below (the suite's 2 s limit would end it too, and blur the cause).
      const patient = await startTestService({ QUERY_TIMEOUT_SECONDS: '3600', WORKER_POOL_SIZE: '0' });
      const marker = `qd_leave_${suffix}`;
      const activeCount = async () => (await direct.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE '%${marker}%' AND pid <> pg_backend_pid() AND state = 'active'`)).rows[0].n as number;
      try {
        const own = (await patient.login()).token;
        const api = catalogClient(patient, own);
        const tree = await api.bootstrap('patient-co');
        const pg = await api.createOk({ item_type: 'connection.postgresql', name: 'pg', parent_laui: tree.folders.connection, content: { host: POSTGRES.host, port: POSTGRES.port, database: POSTGRES.database, user: POSTGRES.user } });
        const controller = new AbortController();
        const request = fetch(new URL(PATH, patient.service.url), {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${own}` },
          body: JSON.stringify({ connection_laui: pg, sql: `SELECT pg_sleep(3600) AS ${marker}` }),
          signal: controller.signal,
        }).catch(() => null);
        await waitUntil(async () => (await activeCount()) === 1, 'the statement runs on the server');
        controller.abort();
        await request;
        await waitUntil(async () => (await activeCount()) === 0, 'the server-side statement is cancelled');
      } finally {
        await direct.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%${marker}%' AND pid <> pg_backend_pid()`).catch(() => undefined);
        await patient.stop();
      }
    });
  });

  describe('given the default settings (10 s connect limit, 2 minutes statement limit)', () => {
    it('when the server accepts the connection and never answers, then 502 after about 10 s', async function () {
      this.timeout(30_000);
      const silent = await silentServer();
      const defaults = await startTestService({ WORKER_POOL_SIZE: '0' });
      try {
        expect(defaults.config.query).to.deep.equal({ statementTimeoutMs: 120_000, connectTimeoutMs: 10_000, maxRows: 10_000, maxBytes: 32 * 1024 * 1024 });
        const own = (await defaults.login()).token;
        const api = catalogClient(defaults, own);
        const tree = await api.bootstrap('defaults-co');
        const connection = await api.createOk({ item_type: 'connection.postgresql', name: 'silent', parent_laui: tree.folders.connection, content: { host: '127.0.0.1', port: silent.port, user: 'x' } });
        const started = Date.now();
        const reply = await defaults.client().post(PATH, { json: { connection_laui: connection, sql: 'SELECT 1' }, token: own });
        expect(reply.status, reply.text).to.equal(502);
        expect(reply.json).to.deep.equal({ detail: 'Could not connect to the target within 10 s' });
        // The default limit, not a shorter one: a lower bound only.
        expect(Date.now() - started).to.be.at.least(9500);
      } finally {
        await defaults.stop();
        await silent.close();
      }
    });
  });
});
