import { expect } from 'chai';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { logQueries, queryLogs, type LogQueryAnswer, type LogQuerySettings } from './queryLogs.ts';

type Rows = Extract<LogQueryAnswer, { rows: unknown }>;

const SECRET = 'TOP-SECRET-KEY-MATERIAL';
const API_SECRET = 'api-category-only-line';
const HISTORY_SECRET = 'task-history-only-line';

const lines = (...entries: Array<Record<string, unknown> | string>): string =>
  entries.map((entry) => (typeof entry === 'string' ? entry : JSON.stringify(entry))).join('\n') + '\n';

describe('SQL over log files (queryLogs, DuckDB sandboxed per query)', () => {
  let dataDir: string;
  let logsRoot: string;
  let task: string;

  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'logsql-'));
    logsRoot = join(dataDir, 'logs');
    task = join(logsRoot, 'TASK');
    mkdirSync(task, { recursive: true });
    mkdirSync(join(logsRoot, 'API'));
    mkdirSync(join(logsRoot, 'TASK_HISTORY'));
    mkdirSync(join(dataDir, 'keys'));
    writeFileSync(join(dataDir, 'keys', 'jwt-private.pem'), `${SECRET}\n`);
    writeFileSync(join(dataDir, 'outside.jsonl'), lines({ timestamp: '2024-05-03T00:00:00.000Z', level: 'info', message: SECRET }));
    writeFileSync(
      join(task, '2024-05-01.jsonl'),
      lines(
        { timestamp: '2024-05-01T10:00:00.000Z', level: 'info', message: 'first', session_id: 's1', step: 'run' },
        { timestamp: '2024-05-01T10:00:01.000Z', level: 'error', message: 'second', session_id: 's1', step: 'run' },
        '{"timestamp":"2024-05-01T10:00:02.000Z","level":"info","message":"torn line',
        { timestamp: '2024-05-01T10:00:03.250Z', level: 'info', message: 'fourth', session_id: 's1', duration_seconds: 1.5, detail: { attempt: 2 } },
        { timestamp: '2024-05-01T10:00:04.000Z', level: 'info', message: 'fifth', session_id: 's1' },
      ),
    );
    writeFileSync(
      join(task, '2024-05-02.jsonl'),
      lines({ timestamp: '2024-05-02T08:00:00.000Z', level: 'warning', message: 'next day', task_name: 'nightly', session_id: 's2' }),
    );
    // An empty day file (a day just rolled over) is skipped, not read as a `json` column.
    writeFileSync(join(task, '2024-05-04.jsonl'), '');
    // Not a day file of the category: a link out of the folder and a file of another name.
    symlinkSync(join(dataDir, 'outside.jsonl'), join(task, '2024-05-03.jsonl'));
    symlinkSync(join(dataDir, 'keys', 'jwt-private.pem'), join(task, 'key-link.jsonl'));
    writeFileSync(join(task, 'notes.jsonl'), lines({ message: 'not a day file' }));
    writeFileSync(join(logsRoot, 'API', '2024-05-01.jsonl'), lines({ timestamp: '2024-05-01T00:00:00.000Z', level: 'info', message: API_SECRET }));
    writeFileSync(join(logsRoot, 'TASK_HISTORY', '2024-05-01.jsonl'), lines({ timestamp: '2024-05-01T00:00:00.000Z', level: 'info', message: HISTORY_SECRET }));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  const query = (body: unknown, settings: Partial<LogQuerySettings> = {}) => queryLogs(body, { logsRoot, settings });
  const rowsOf = async (body: unknown, settings: Partial<LogQuerySettings> = {}): Promise<Rows> => {
    const answer = await query(body, settings);
    if ('error' in answer) throw new Error(`expected rows, got error: ${answer.error}`);
    return answer;
  };
  const errorOf = async (body: unknown, settings: Partial<LogQuerySettings> = {}): Promise<string> => {
    const answer = await query(body, settings);
    expect(answer, JSON.stringify(answer).slice(0, 500)).to.have.key('error');
    return (answer as { error: string }).error;
  };

  describe('the view logs', () => {
    it('given two days with different keys, when queried without a date, then one view holds both days with the columns merged by name', async () => {
      const answer = await rowsOf({ category: 'TASK', sql: 'SELECT message, task_name, duration_seconds FROM logs WHERE message IS NOT NULL ORDER BY timestamp' });
      expect(answer.columns).to.deep.equal(['message', 'task_name', 'duration_seconds']);
      expect(answer.rows).to.deep.equal([
        ['first', null, null],
        ['second', null, null],
        ['fourth', null, 1.5],
        ['fifth', null, null],
        ['next day', 'nightly', null],
      ]);
      expect(answer.row_count).to.equal(5);
    });

    it('given a date, when queried, then only that day is scanned', async () => {
      const answer = await rowsOf({ category: 'TASK', date: '2024-05-02', sql: 'SELECT message FROM logs' });
      expect(answer.rows).to.deep.equal([['next day']]);
      const columns = await rowsOf({ category: 'TASK', date: '2024-05-02', sql: 'DESCRIBE logs' });
      expect(columns.rows.map((row) => row[0])).to.not.include('duration_seconds');
    });

    it('given a malformed line in the middle of a day, when queried, then the lines around it are read and it counts as a row of NULLs', async () => {
      const answer = await rowsOf({ category: 'TASK', date: '2024-05-01', sql: 'SELECT count(*) AS lines, count(message) AS readable, list(message ORDER BY timestamp) AS messages FROM logs' });
      expect(answer.rows).to.deep.equal([[5, 4, ['first', 'second', 'fourth', 'fifth', null]]]);
    });

    it('given links and other files in the folder, when every day is queried, then only the regular day files are read', async () => {
      const answer = await rowsOf({ category: 'TASK', sql: 'SELECT count(*) FROM logs' });
      expect(answer.rows).to.deep.equal([[6]]);
      expect(JSON.stringify(await query({ category: 'TASK', sql: 'SELECT * FROM logs' }))).to.not.include(SECRET);
    });

    it('given a category or day with no log file, when queried, then an error says so', async () => {
      expect(await errorOf({ category: 'CRON', sql: 'SELECT 1' })).to.match(/No log files for category CRON/);
      expect(await errorOf({ category: 'TASK', date: '2024-06-01', sql: 'SELECT 1' })).to.match(/No log files for category TASK on 2024-06-01/);
      expect(await errorOf({ category: 'TASK', date: '2024-05-04', sql: 'SELECT 1' })).to.match(/No log files/);
    });
  });

  describe('the request', () => {
    it('given no category, when queried, then an error comes at once, before any file or SQL is looked at', async () => {
      // No logs directory at all: had the files been looked at, the answer would say there are none.
      const answer = await queryLogs({ sql: 'SELECT 1' }, { logsRoot: '/nonexistent' });
      expect(answer).to.deep.equal({ error: 'category is required: one of API, TASK, TASK_HISTORY, CRON, PERFORMANCE, CELERY' });
      expect(await errorOf({ category: null, sql: 'nonsense' })).to.match(/category is required/);
    });

    it('given a category that is not one of the six, when queried, then an error', async () => {
      for (const category of ['task', 'sessions', '../TASK', 'TASK/..', 42, ['TASK']]) {
        expect(await errorOf({ category, sql: 'SELECT 1' })).to.match(/Unknown category/);
      }
    });

    it('given a date that is not a calendar date as YYYY-MM-DD, when queried, then an error', async () => {
      for (const date of ['2024-02-30', '2024-5-1', '2024-05-01T00:00:00Z', '../2024-05-01', 20240501, '']) {
        expect(await errorOf({ category: 'TASK', sql: 'SELECT 1', date })).to.match(/date must be/);
      }
      expect(await rowsOf({ category: 'TASK', sql: 'SELECT 1', date: '2024-05-01' })).to.have.property('row_count', 1);
    });

    it('given a body that is not an object or has no SQL, when queried, then an error', async () => {
      for (const body of [null, 'SELECT 1', [], 42]) expect(await errorOf(body)).to.match(/JSON object/);
      for (const sql of [undefined, '', '   ', 42]) expect(await errorOf({ category: 'TASK', sql })).to.match(/sql is required/);
      expect(await errorOf({ category: 'TASK', sql: '-- only a comment' })).to.equal('No SQL statement found');
      expect(await errorOf({ category: 'TASK', sql: 'SELEC 1' })).to.match(/syntax error/);
    });
  });

  describe('what a query may be', () => {
    it('given SELECT, WITH, DESCRIBE, FROM-first and EXPLAIN of a SELECT, when queried, then each answers rows', async () => {
      for (const sql of [
        'SELECT level FROM logs LIMIT 1',
        'WITH e AS (SELECT * FROM logs WHERE level = $$error$$) SELECT count(*) FROM e',
        'DESCRIBE logs',
        'FROM logs SELECT level LIMIT 1',
        'SELECT 1;',
        'EXPLAIN SELECT count(*) FROM logs',
        'EXPLAIN ANALYZE SELECT count(*) FROM logs',
      ]) {
        const answer = await query({ category: 'TASK', sql });
        expect(answer, sql).to.have.property('row_count').above(0);
      }
    });

    it('given a result longer than the row cap, when queried, then the first maxRows rows come with truncated true', async () => {
      const answer = await rowsOf({ category: 'TASK', sql: 'SELECT * FROM range(100000)' }, { maxRows: 5 });
      expect(answer.rows).to.deep.equal([[0], [1], [2], [3], [4]]);
      expect(answer).to.include({ row_count: 5, truncated: true });
      expect(await rowsOf({ category: 'TASK', sql: 'SELECT 1' })).to.include({ truncated: false });
    });

    it('given a result wider than 32 MB, when queried, then an error instead of the rows', async () => {
      expect(await errorOf({ category: 'TASK', sql: "SELECT repeat('x', 20000000) AS a, repeat('y', 20000000) AS b" })).to.match(/larger than 32 MB/);
      expect(await rowsOf({ category: 'TASK', sql: "SELECT repeat('x', 1000000) AS a" })).to.include({ row_count: 1 });
    });

    it('given values of every kind, when answered, then they are JSON-safe (exact integers, ISO instants, objects and lists)', async () => {
      const answer = await rowsOf({
        category: 'TASK',
        sql:
          "SELECT count(*) AS n, 9007199254740993::HUGEINT AS huge, -12::BIGINT AS small, 1.25::DECIMAL(5,2) AS dec, 123456789012345678.9::DECIMAL(20,1) AS wide, " +
          "TIMESTAMP '2024-05-01 10:00:00.123456' AS micros, TIMESTAMPTZ '2024-05-01 10:00:00+02' AS tz, DATE '2024-02-29' AS day, " +
          "{'a': 1::BIGINT, 'b': [TIMESTAMP '2024-01-01']} AS nested, 'NaN'::DOUBLE AS nan, NULL AS nothing FROM logs",
      });
      expect(answer.rows).to.deep.equal([
        [6, '9007199254740993', -12, 1.25, '123456789012345678.9', '2024-05-01T10:00:00.123456Z', '2024-05-01T08:00:00.000Z', '2024-02-29', { a: 1, b: ['2024-01-01T00:00:00.000Z'] }, 'NaN', null],
      ]);
      const timestamps = await rowsOf({ category: 'TASK', date: '2024-05-01', sql: 'SELECT timestamp FROM logs WHERE message = $$fourth$$' });
      expect(timestamps.rows).to.deep.equal([['2024-05-01T10:00:03.250Z']]);
      expect(JSON.parse(JSON.stringify(answer))).to.deep.equal(answer);
    });
  });

  describe('escape attempts: each is an error, and no data comes back', () => {
    const refused = async (sql: string, leak: string = SECRET): Promise<string> => {
      const answer = await query({ category: 'TASK', sql });
      expect(answer, `${sql} => ${JSON.stringify(answer).slice(0, 300)}`).to.have.key('error');
      expect(JSON.stringify(answer)).to.not.include(leak);
      return (answer as { error: string }).error;
    };

    it('given a read of a file outside the category folder, when queried, then the sandbox refuses it', async () => {
      expect(await refused("SELECT * FROM read_csv('/etc/passwd', sep = ':')", 'root:')).to.match(/Permission Error/);
      expect(await refused(`SELECT * FROM read_text('${join(dataDir, 'keys', 'jwt-private.pem')}')`)).to.match(/Permission Error/);
      expect(await refused(`SELECT * FROM read_blob('${join(dataDir, 'keys', 'jwt-private.pem')}')`)).to.match(/Permission Error/);
      expect(await refused(`SELECT * FROM read_text('${task}/../../keys/jwt-private.pem')`)).to.match(/Permission Error/);
      await refused("SELECT * FROM read_text('/proc/self/environ')", 'PATH=');
      await refused("SELECT * FROM read_text('http://127.0.0.1:9/')");
    });

    it('given a link inside the folder that points out of it, when read directly, then DuckDB refuses it', async () => {
      await refused(`SELECT * FROM read_text('${task}/key-link.jsonl')`);
      await refused(`SELECT * FROM read_json('${task}/2024-05-03.jsonl')`);
    });

    it('given a read of another category, by path, by a glob or through a shared name prefix, when queried, then it is refused', async () => {
      await refused(`SELECT * FROM read_json('${logsRoot}/API/2024-05-01.jsonl')`, API_SECRET);
      await refused(`SELECT * FROM read_json('${task}/../API/*.jsonl')`, API_SECRET);
      await refused(`SELECT * FROM read_json('${task}/../*/*.jsonl')`, API_SECRET);
      await refused("SELECT * FROM read_json('../*/*.jsonl')", API_SECRET);
      await refused(`SELECT * FROM glob('${logsRoot}/*')`, 'API');
      // TASK/ is allowed, with its slash: TASK_HISTORY shares the prefix without it.
      await refused(`SELECT * FROM read_text('${logsRoot}/TASK_HISTORY/2024-05-01.jsonl')`, HISTORY_SECRET);
    });

    it('given COPY, EXPORT (which acts while being prepared) or a write hidden in EXPLAIN ANALYZE or query(), when queried, then it is refused and nothing is written', async () => {
      await refused(`COPY (SELECT * FROM logs) TO '${task}/copied.csv'`);
      await refused("COPY (SELECT * FROM logs) TO '/tmp/logsql-copied.csv'");
      await refused(`EXPLAIN ANALYZE COPY (SELECT 1) TO '${task}/explained.csv'`);
      await refused(`EXPLAIN (ANALYZE) COPY (SELECT 1) TO '${task}/explained.csv'`);
      await refused(`SELECT * FROM query('COPY (SELECT 1) TO ''${task}/queried.csv''')`);
      await refused(`EXPORT DATABASE '${task}/exported'`);
      expect(readdirSync(task).sort()).to.deep.equal(['2024-05-01.jsonl', '2024-05-02.jsonl', '2024-05-03.jsonl', '2024-05-04.jsonl', 'key-link.jsonl', 'notes.jsonl']);
      expect(existsSync('/tmp/logsql-copied.csv')).to.equal(false);
    });

    it('given ATTACH, INSTALL, LOAD, SET, RESET, PRAGMA or CALL, when queried, then the statement type is refused', async () => {
      expect(await refused(`ATTACH '${task}/db.duckdb' AS other`)).to.match(/not ATTACH/);
      expect(await refused('INSTALL httpfs')).to.match(/not INSTALL/);
      expect(await refused('LOAD httpfs')).to.match(/not LOAD/);
      expect(await refused('SET enable_external_access = true')).to.match(/not SET/);
      expect(await refused('RESET lock_configuration')).to.match(/not RESET/);
      expect(await refused("PRAGMA threads = 64")).to.match(/not PRAGMA/);
      expect(await refused("PRAGMA table_info('logs')")).to.match(/not PRAGMA/);
      expect(await refused('CALL pragma_version()')).to.match(/not CALL/);
    });

    it('given CREATE, DELETE, DROP or a transaction, when queried, then it is refused', async () => {
      expect(await refused('CREATE TABLE copy AS SELECT * FROM logs')).to.match(/not CREATE/);
      expect(await refused('CREATE MACRO m() AS 1')).to.match(/not CREATE/);
      expect(await refused('DELETE FROM logs')).to.match(/not DELETE/);
      expect(await refused('DROP VIEW logs')).to.match(/not DROP/);
      expect(await refused('BEGIN TRANSACTION')).to.match(/not BEGIN/);
    });

    it('given two statements, also behind comments, when queried, then they are refused as more than one', async () => {
      expect(await refused('SELECT 1; SELECT 2')).to.equal('Exactly one SQL statement is allowed, found 2');
      expect(await refused(`SELECT count(*) FROM logs -- harmless\n; COPY (SELECT 1) TO '${task}/x.csv'`)).to.match(/found 2/);
      expect(await refused('SELECT 1 /* ; */ ; DROP VIEW logs')).to.match(/found 2/);
      expect(await refused("SELECT ';' AS text; ATTACH ':memory:' AS m")).to.match(/found 2/);
      // A comment that only looks like a second statement is a comment: one SELECT, answered.
      expect(await rowsOf({ category: 'TASK', sql: 'SELECT 1 AS one -- ; DROP VIEW logs' })).to.include({ row_count: 1 });
    });

    it('given environment or settings lookups, when queried, then no environment value leaks', async () => {
      const saved = process.env.HTTP_PROXY;
      process.env.HTTP_PROXY = 'http://proxy-user:proxy-password@proxy.invalid:3128';
      try {
        expect(await refused("SELECT getenv('HOME')")).to.match(/getenv does not exist/);
        const settings = JSON.stringify(await query({ category: 'TASK', sql: 'SELECT name, value FROM duckdb_settings()' }));
        expect(settings).to.not.include('proxy-password');
        const proxy = await rowsOf({ category: 'TASK', sql: "SELECT current_setting('http_proxy')" });
        expect(proxy.rows).to.deep.equal([['none']]);
        const locked = await rowsOf({ category: 'TASK', sql: "SELECT current_setting('enable_external_access'), current_setting('lock_configuration'), current_setting('autoload_known_extensions'), current_setting('autoinstall_known_extensions'), current_setting('threads')" });
        expect(locked.rows).to.deep.equal([[false, true, false, false, 2]]);
      } finally {
        if (saved === undefined) delete process.env.HTTP_PROXY;
        else process.env.HTTP_PROXY = saved;
      }
    });
  });

  describe('bounds', () => {
    it('given a query slower than the limit, when it runs, then the connection is interrupted at the limit and the answer is an error', async () => {
      const started = performance.now();
      const error = await errorOf({ category: 'TASK', sql: 'SELECT sum(a.range * b.range) FROM range(300000) a, range(300000) b' }, { timeoutMs: 1000 });
      expect(error).to.equal('The query ran past the 1 s limit and was interrupted');
      // Not before the limit (a lower bound: a slower machine only makes it longer). Not interrupted, the
      // query (9e10 rows) would run for many minutes: the test's timeout, not a bound here, would end it.
      expect(performance.now() - started).to.be.at.least(900);
      // The sandbox of the interrupted query is gone and the next query runs normally.
      expect(await rowsOf({ category: 'TASK', sql: 'SELECT 1' })).to.include({ row_count: 1 });
    });

    it('given a client that leaves, when its query runs, then it is interrupted', async () => {
      const gone = new AbortController();
      setTimeout(() => gone.abort(), 300);
      // Not interrupted, the query (9e10 rows) would run for many minutes: the test's timeout would end it.
      const answer = await queryLogs({ category: 'TASK', sql: 'SELECT sum(a.range * b.range) FROM range(300000) a, range(300000) b' }, { logsRoot, signal: gone.signal });
      expect(answer).to.deep.equal({ error: 'The client went away; the query was interrupted' });
    });

    it('given more queries than may run and wait, when they arrive together, then the surplus is refused at once and the rest are answered', async () => {
      const queries = logQueries({ logsRoot, settings: { maxConcurrent: 1, timeoutMs: 10_000 } });
      const slow = { category: 'TASK', sql: 'SELECT count(*) FROM range(20000000) a' };
      const answers = await Promise.all(Array.from({ length: 7 }, () => queries.query(slow)));
      const refusedCount = answers.filter((answer) => 'error' in answer && /Too many log queries/.test(answer.error)).length;
      expect(refusedCount).to.equal(2);
      expect(answers.filter((answer) => 'rows' in answer)).to.have.length(5);
    });
  });
});
