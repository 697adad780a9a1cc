import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type mysql from 'mysql2/promise';
import { catalogClient, type CatalogClient } from '../support/catalogFixture.ts';
import { HttpClient, type Reply } from '../support/HttpClient.ts';
import { MARIADB, POSTGRES, mariadbConnection, postgresClient, requireDatabase } from '../support/databases.ts';
import { hostilePostgres, type HostileBehaviour } from '../support/hostilePostgres.ts';
import { startRole, stopRole, type RoleProcess } from '../support/roleProcess.ts';
import { signIn } from '../support/signIn.ts';

/**
 * POST /api/v1/query/execute against what a signed-in attacker sent (the security review's
 * findings), with the service in its own process (`npm start` as CI runs it): a crash is an exit
 * of that process, and its memory is that process's RSS. PostgreSQL and MariaDB as in
 * test/support/databases.ts (CI starts both; with CI=true a missing one fails the suite).
 */

const PATH = '/api/v1/query/execute';
const PASSWORD = 'attacks-admin-password-1';
const MIB = 1024 * 1024;
const MAX_BYTES = 32 * MIB;
interface Answer {
  columns: string[];
  rows: unknown[][];
  row_count: number;
  truncated: boolean;
}

/** The resident memory of a process, in MB (/proc/<pid>/status VmRSS). */
const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN) / 1024;

describe('POST /api/v1/query/execute against what an attacker sends (service in its own process)', function () {
  this.timeout(300_000);
  // Starts with a letter: the big5 spec's file name is read as code by the server, and a hex suffix
  // such as 297e4386 lexes as a float literal out of range, refused before the unknown column.
  const suffix = `x${randomBytes(4).toString('hex')}`;
  let dataDir = '';
  let service: RoleProcess;
  let api: CatalogClient;
  let token = '';
  let folder = '';
  let direct: pg.Client;
  let maria: mysql.Connection;
  const connections: Record<string, string> = {};

  const query = (connection: string, sql: string): Promise<Reply> => new HttpClient(service.url).post(PATH, { json: { connection_laui: connections[connection], sql }, token });
  const connectionItem = (item_type: string, name: string, content: unknown) => api.createOk({ item_type, name, parent_laui: folder, content });
  /** The service is still up and answering. */
  const alive = async (): Promise<void> => {
    const reply = await query('pg', 'SELECT 1 AS one');
    expect(reply.status, reply.text).to.equal(200);
    expect((reply.json as Answer).rows).to.deep.equal([[1]]);
  };

  before(async function () {
    await requireDatabase(this, 'postgresql');
    await requireDatabase(this, 'mariadb');
    direct = await postgresClient();
    maria = await mariadbConnection();
    dataDir = mkdtempSync(join(tmpdir(), 'orchestrator-attacks-'));
    service = await startRole('all', {
      DATA_DIR: dataDir,
      ADMIN_PASSWORD: PASSWORD,
      PORT: '0',
      SQLITE_SYNCHRONOUS: 'normal',
      WORKER_POOL_SIZE: '0',
      ...(process.getuid?.() === 0 ? {} : { WORKER_SANDBOX: 'none' }),
    });
    ({ token } = await signIn(service.url, 'admin', PASSWORD));
    api = catalogClient({ client: () => new HttpClient(service.url) }, token);
    folder = (await api.bootstrap('attacks-co')).folders.connection;
    connections.pg = await connectionItem('connection.postgresql', 'pg', { ...POSTGRES });
    connections.big5 = await connectionItem('connection.mysql', 'maria-big5', { ...MARIADB, charset: 'big5' });
  });
  after(async () => {
    if (service) await stopRole(service);
    if (dataDir !== '') rmSync(dataDir, { recursive: true, force: true });
    await direct?.end();
    await maria?.end();
  });
  afterEach(function () {
    // Whatever a case sent, the service must still be running.
    if (this.currentTest?.state === 'passed') expect(service.output()).to.not.match(/ERR_STRING_TOO_LONG|Unknown authenticationOk/);
  });

  describe('given values larger than the answer may be (QUERY_MAX_BYTES, 32 MiB by default)', () => {
    it("when SELECT repeat('x', 200000000) is asked three times, then each answer is cut at the bound and the service's memory comes back (RSS before and after)", async () => {
      await alive();
      const before = rssMb(service.pid);
      const figures: number[] = [];
      for (let attempt = 0; attempt < 3; attempt += 1) {
        const reply = await query('pg', "SELECT repeat('x', 200000000) AS big");
        expect(reply.status).to.equal(200);
        const answer = reply.json as Answer;
        expect([answer.row_count, answer.truncated]).to.deep.equal([1, true]);
        expect((answer.rows[0]?.[0] as string).endsWith('…[value cut: 200000000 bytes]')).to.equal(true);
        expect(Buffer.byteLength(reply.text)).to.be.at.most(MAX_BYTES);
        figures.push(rssMb(service.pid));
      }
      // Unbounded, three 200 MB answers took it from 306 to 1,475 MB and it stayed there. Bounded,
      // a request holds the 32 MiB answer a few times over while it runs, and the memory is given
      // back once the process is idle (V8 shrinks its heap a few seconds after the last request).
      const peak = Math.max(...figures);
      let after = rssMb(service.pid);
      for (let waited = 0; waited < 60 && after > before + 64; waited += 1) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        after = rssMb(service.pid);
      }
      console.log(`      service RSS: before ${before.toFixed(0)} MB, after each ${figures.map((mb) => mb.toFixed(0)).join(', ')} MB, once idle ${after.toFixed(0)} MB`);
      expect(peak - before).to.be.below(512);
      expect(after - before).to.be.below(64);
    });

    it("when SELECT repeat('x', 600000000) runs on PostgreSQL, then 200 with the value cut at the bound and marked, truncated, and the service still runs", async () => {
      const reply = await query('pg', "SELECT repeat('x', 600000000) AS big");
      expect(reply.status, reply.text.slice(0, 300)).to.equal(200);
      const answer = reply.json as Answer;
      expect([answer.columns, answer.row_count, answer.truncated]).to.deep.equal([['big'], 1, true]);
      const value = answer.rows[0]?.[0] as string;
      expect(value.endsWith('…[value cut: 600000000 bytes]')).to.equal(true);
      expect(value.startsWith('xxxxxxxx')).to.equal(true);
      expect(Buffer.byteLength(reply.text)).to.be.at.most(MAX_BYTES).and.above(MAX_BYTES - 1024);
      await alive();
    });

    it('when rows add up past the bound, then rows stop there with truncated true and the body within the bound', async () => {
      const reply = await query('pg', "SELECT g, repeat('y', 1000000) AS pad FROM generate_series(1, 100) g");
      expect(reply.status).to.equal(200);
      const answer = reply.json as Answer;
      expect(answer.truncated).to.equal(true);
      expect(answer.row_count).to.equal(answer.rows.length).and.to.be.within(30, 33);
      expect(answer.rows.map((row) => row[0])).to.deep.equal(Array.from({ length: answer.row_count }, (_, index) => index + 1));
      expect(Buffer.byteLength(reply.text)).to.be.at.most(MAX_BYTES);
    });
  });

  describe('given a PostgreSQL server the attacker wrote (the driver must never take the process down)', () => {
    const hostile = async (behaviour: HostileBehaviour, sql = 'SELECT 1'): Promise<Reply> => {
      const server = await hostilePostgres(behaviour);
      try {
        const connection = await connectionItem('connection.postgresql', `hostile-${behaviour.kind}`, { host: '127.0.0.1', port: server.port, user: 'x' });
        return await new HttpClient(service.url).post(PATH, { json: { connection_laui: connection, sql }, token });
      } finally {
        await server.close();
      }
    };

    it('when it sends a single 600 MB value, then 200 with the value cut and marked', async () => {
      const reply = await hostile({ kind: 'huge-row', valueBytes: 600_000_000 });
      expect(reply.status, reply.text.slice(0, 300)).to.equal(200);
      expect(((reply.json as Answer).rows[0]?.[0] as string).endsWith('…[value cut: 600000000 bytes]')).to.equal(true);
      await alive();
    });
    it('when it sends a json value that does not parse, then 200 with the text as sent', async () => {
      const reply = await hostile({ kind: 'bad-json' });
      expect(reply.status, reply.text).to.equal(200);
      expect((reply.json as Answer).rows).to.deep.equal([['{']]);
      await alive();
    });
    it('when it answers the startup with a message pg throws on, or a 2 MiB parameter, then 502 for that request only', async () => {
      const badAuth = await hostile({ kind: 'bad-auth' });
      expect(badAuth.status, badAuth.text).to.equal(502);
      expect((badAuth.json as { detail: string }).detail).to.match(/Unknown authenticationOk message type 99/);
      const hugeParameter = await hostile({ kind: 'huge-parameter' });
      expect(hugeParameter.status, hugeParameter.text).to.equal(502);
      expect((hugeParameter.json as { detail: string }).detail).to.match(/protocol message of \d+ bytes \(type S\)/);
      await alive();
    });
  });

  describe('given a MariaDB connection with charset big5 (the check and the server must read the same string)', () => {
    // As the review sent them: for a big5 session mysql2 writes Ě as 0x88 0x5C, and MariaDB's big5
    // lexer read 0x5C as a backslash, so the first string ran on to the next quote and what the
    // check saw as a string was code. Read alike, the `/` after the second string is code for both:
    // the server then refuses an unknown column, and nothing runs.
    it("when SELECT 'Ě' AS a, ' INTO OUTFILE '/tmp/...' -- ' is sent, then the server reads the strings where the check did and writes no file", async () => {
      const file = `/tmp/qd-written-${suffix}`;
      const sql = `SELECT 'Ě' AS a, ' INTO OUTFILE '${file}' -- '`;
      const reply = await query('big5', sql);
      expect(reply.status, reply.text).to.equal(400);
      expect((reply.json as { detail: string }).detail).to.match(/^Unknown column 'tmp'/);
      const [rows] = await maria.query('SELECT LOAD_FILE(?) AS content', [file]);
      expect(rows).to.deep.equal([{ content: null }]);
    });
    it("when the same trick wraps LOAD_FILE('/etc/passwd'), then the file never comes back", async () => {
      const reply = await query('big5', "SELECT 'Ě' AS a, ' , LOAD_FILE('/etc/passwd') AS f -- '");
      expect(reply.status, reply.text).to.equal(400);
      expect((reply.json as { detail: string }).detail).to.match(/^Unknown column 'etc'/);
      expect(reply.text).to.not.include('root:').and.not.include(Buffer.from('root:').toString('base64').slice(0, 6));
      const direct = await query('big5', "SELECT LOAD_FILE('/etc/passwd')");
      expect(direct.status).to.equal(400);
      expect((direct.json as { detail: string }).detail).to.match(/^Refused: load_file/);
    });
    it('when the literals are read alike, then a big5 connection answers them as written', async () => {
      const reply = await query('big5', "SELECT 'Ě' AS a, ' INTO OUTFILE ''/tmp/x'' -- ' AS b");
      expect(reply.status, reply.text).to.equal(200);
      expect((reply.json as Answer).rows).to.deep.equal([['Ě', " INTO OUTFILE '/tmp/x' -- "]]);
    });
  });

  describe('given PostgreSQL large objects and server files in a read-only session', () => {
    const objects = async (): Promise<number> => (await direct.query('SELECT count(*)::int AS n FROM pg_largeobject_metadata')).rows[0].n as number;
    it('when lo_import, lo_create, lo_from_bytea, lo_put, lo_unlink or lo_export is called, then 400 before any connection and no large object changes', async () => {
      const oid = (await direct.query("SELECT lo_from_bytea(0, '\\x6b656570'::bytea) AS oid")).rows[0].oid as number;
      try {
        const count = await objects();
        for (const sql of [
          "SELECT lo_import('/etc/passwd')",
          'SELECT lo_create(0)',
          "SELECT lo_from_bytea(0, '\\x00'::bytea)",
          `SELECT lo_put(${oid}, 0, '\\x00'::bytea)`,
          `SELECT lo_unlink(${oid})`,
          `SELECT lo_export(${oid}, '/tmp/qd-lo-${suffix}')`,
          `SELECT pg_catalog."lo_unlink"(${oid})`,
        ]) {
          const reply = await query('pg', sql);
          expect(reply.status, `${sql}: ${reply.text}`).to.equal(400);
          expect((reply.json as { detail: string }).detail, sql).to.match(/^Refused: lo_/);
        }
        expect(await objects()).to.equal(count);
        expect((await direct.query(`SELECT convert_from(lo_get(${oid}), 'UTF8') AS text`)).rows[0].text).to.equal('keep');
      } finally {
        await direct.query(`SELECT lo_unlink(${oid})`);
      }
    });
    it('when server files, notifications or other connections are asked for, then 400 naming the function', async () => {
      for (const [sql, name] of [
        ["SELECT pg_read_file('/etc/passwd')", 'pg_read_file'],
        ["SELECT pg_read_binary_file('/etc/passwd')", 'pg_read_binary_file'],
        ["SELECT pg_ls_dir('/')", 'pg_ls_dir'],
        ["SELECT pg_stat_file('/etc/passwd')", 'pg_stat_file'],
        ["SELECT pg_notify('qd', 'x')", 'pg_notify'],
        ["SELECT dblink_exec('dbname=test', 'SELECT 1')", 'dblink_exec'],
      ] as const) {
        const reply = await query('pg', sql);
        expect(reply.status, sql).to.equal(400);
        expect((reply.json as { detail: string }).detail, sql).to.match(new RegExp(`^Refused: ${name}`));
      }
    });
    it('when a -- comment ends with a lone carriage return, then what follows is code for the check as for PostgreSQL, refused before any connection', async () => {
      for (const [sql, detail] of [
        ['SELECT 1 -- note\rDELETE FROM pg_class', 'Blocked keyword: DELETE'],
        ['SELECT * FROM pg_class -- note\r FOR UPDATE', 'Blocked keyword: UPDATE'],
        [`SELECT 1 -- note\r INTO qd_into_${suffix}`, 'SELECT ... INTO is not allowed (it creates a table or writes a file)'],
        ["SELECT 1 -- note\r, lo_import('/etc/passwd')", 'Refused: lo_import'],
      ] as const) {
        const reply = await query('pg', sql);
        expect(reply.status, JSON.stringify(sql)).to.equal(400);
        expect((reply.json as { detail: string }).detail, JSON.stringify(sql)).to.satisfy((text: string) => text.startsWith(detail));
      }
      const answer = await query('pg', 'SELECT 1 AS one -- DELETE\r\n, 2 AS two');
      expect((answer.json as Answer).rows).to.deep.equal([[1, 2]]);
    });
  });
});
