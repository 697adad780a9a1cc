import { expect } from 'chai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestService, type TestService } from '../../test/support/testService.ts';

describe('POST /api/v1/logs/query (HTTP, embedded service)', () => {
  let svc: TestService;

  before(async () => {
    // A query time limit of an hour: a slow query still running holds its turn longer than any test waits.
    svc = await startTestService({ LOG_QUERY_MAX_ROWS: '3', LOG_QUERY_CONCURRENCY: '1', LOG_QUERY_TIMEOUT_SECONDS: '3600' });
    const task = join(svc.dataDir, 'logs', 'TASK');
    mkdirSync(task, { recursive: true });
    const line = (index: number) => JSON.stringify({ timestamp: `2024-05-01T10:00:0${index}.000Z`, level: index % 2 ? 'error' : 'info', message: `line ${index}` });
    writeFileSync(join(task, '2024-05-01.jsonl'), `${[0, 1, 2, 3, 4].map(line).join('\n')}\n`);
  });
  after(async () => svc.stop());

  const post = (body: string, contentType = 'application/json') =>
    svc.client().request('POST', '/api/v1/logs/query', { body, headers: { 'content-type': contentType } });

  it('given a day of TASK logs, when a GROUP BY is posted without a token (the route is public), then 200 with columns, rows and row_count', async () => {
    const reply = await post(JSON.stringify({ category: 'TASK', date: '2024-05-01', sql: 'SELECT level, count(*) AS n FROM logs GROUP BY level ORDER BY level' }));
    expect(reply.status).to.equal(200);
    expect(reply.json).to.deep.equal({ columns: ['level', 'n'], rows: [['error', 2], ['info', 3]], row_count: 2, truncated: false });
    expect(reply.headers.get('cache-control')).to.equal('no-store');
  });

  it('given LOG_QUERY_MAX_ROWS, when more rows match, then the answer is cut there and says so', async () => {
    const reply = await post(JSON.stringify({ category: 'TASK', sql: 'SELECT message FROM logs ORDER BY timestamp' }));
    expect(reply.json).to.deep.equal({ columns: ['message'], rows: [['line 0'], ['line 1'], ['line 2']], row_count: 3, truncated: true });
  });

  it('given failures of every kind, when posted, then each is HTTP 200 {error} (the spec), never a 4xx or 500', async () => {
    const cases: Array<[string, string, RegExp]> = [
      [JSON.stringify({ sql: 'SELECT 1' }), 'application/json', /category is required/],
      [JSON.stringify({ category: 'TASK', sql: "SELECT * FROM read_csv('/etc/passwd')" }), 'application/json', /Permission Error/],
      [JSON.stringify({ category: 'TASK', sql: 'SELECT 1; SELECT 2' }), 'application/json', /found 2/],
      [JSON.stringify({ category: 'CRON', sql: 'SELECT 1' }), 'application/json', /No log files for category CRON/],
      ['{"category": "TASK", "sql": ', 'application/json', /not valid JSON/],
      ['[1, 2]', 'application/json', /JSON object/],
      ['"SELECT 1"', 'application/json', /JSON object/],
      ['SELECT 1', 'text/plain', /JSON object/],
      ['', 'application/json', /JSON object|category is required/],
      [`{"category":"TASK","sql":${'['.repeat(3000)}${']'.repeat(3000)}}`, 'application/json', /nested deeper/],
      [JSON.stringify({ category: 'TASK', sql: `SELECT '${'x'.repeat(2 * 1024 * 1024)}'` }), 'application/json', /too large/],
    ];
    for (const [body, contentType, expected] of cases) {
      const reply = await post(body, contentType);
      expect(reply.status, `${body.slice(0, 60)} => ${reply.text.slice(0, 200)}`).to.equal(200);
      expect((reply.json as { error: string }).error, body.slice(0, 60)).to.match(expected);
    }
  });

  it('given a client that leaves during a slow query, when it disconnects, then its query is interrupted and frees its turn', async () => {
    const leaving = new AbortController();
    const slow = fetch(`${svc.service.url}/api/v1/logs/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ category: 'TASK', sql: 'SELECT sum(a.range * b.range) FROM range(300000) a, range(300000) b' }),
      signal: leaving.signal,
    }).catch(() => 'left');
    await new Promise((resolve) => setTimeout(resolve, 400));
    leaving.abort();
    expect(await slow).to.equal('left');
    // One query at a time (LOG_QUERY_CONCURRENCY=1): this one runs only once the slow one has stopped.
    // Were the slow one not interrupted, it would hold the turn for its hour: the test's timeout would end this.
    const reply = await post(JSON.stringify({ category: 'TASK', sql: 'SELECT count(*) FROM logs' }));
    expect(reply.json).to.deep.include({ rows: [[5]] });
  });

  it('given a malformed JSON body on another route, when posted, then that route still answers 422 as before', async () => {
    const reply = await svc.client().request('POST', '/api/v1/token', { body: '{"grant_type": ', headers: { 'content-type': 'application/json' } });
    expect(reply.status).to.equal(422);
  });
});
