import { expect } from 'chai';
import { mkdirSync, writeFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { newLaui } from '../../shared/ids.ts';
import { sessionLogFile } from '../../ops/logging/sessionLogFile.ts';
import { sseEvents, type SseEvent } from '../../test/support/sseEvents.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';

/** A session file as the logger writes it: `sessions/<day>/<HHMMSS>.jsonl` of the id's second. */
const sessionFile = (logs: string, sessionId: string): string => {
  const { dir, file } = sessionLogFile(logs, sessionId, '');
  mkdirSync(dir, { recursive: true });
  return join(dir, file);
};

const line = (entry: Record<string, unknown>): string => `${JSON.stringify(entry)}\n`;

describe('logs read endpoints (spec 4.9, section 6; HTTP, embedded service)', () => {
  let svc: TestService;
  let logs: string;
  /** A finished session of 4 lines, sharing its file with another session of the same second. */
  const session = newLaui(new Date('2026-01-01T10:00:00Z'));
  const neighbour = newLaui(new Date('2026-01-01T10:00:00Z'));
  const big = `${'{"level":"info","message":"é ü 日本 ✓"}\n'.repeat(5000)}`;
  const taskDay = Array.from({ length: 300 }, (_, index) => line({ level: 'info', message: `line ${index + 1}` })).join('');

  before(async () => {
    svc = await startTestService();
    logs = join(svc.dataDir, 'logs');
    mkdirSync(join(logs, 'TASK'), { recursive: true });
    writeFileSync(join(logs, 'TASK', '2026-01-01.jsonl'), taskDay);
    writeFileSync(join(logs, 'TASK', '2026-01-02.jsonl'), '');
    mkdirSync(join(logs, 'CRON'), { recursive: true });
    writeFileSync(join(logs, 'CRON', '2026-01-03.jsonl'), big);
    const file = sessionFile(logs, session);
    const at = (second: number) => `2026-01-01T10:00:${String(second).padStart(2, '0')}.000Z`;
    appendFileSync(file, line({ timestamp: at(0), level: 'info', category: 'CELERY', step: 'pickup', message: 'picked up', session_id: session, task_laui: session }));
    appendFileSync(file, line({ timestamp: at(1), level: 'info', category: 'TASK', step: 'run', message: 'neighbour', session_id: neighbour }));
    appendFileSync(file, line({ timestamp: at(2), level: 'info', category: 'TASK', step: 'run', message: 'hello from the operator', session_id: session }));
    appendFileSync(file, '{"timestamp":"2026-01-01T10:00:03.000Z","level":"info","session_id":"' + session + '", cut by a crash\n');
    appendFileSync(file, line({ timestamp: at(4), level: 'error', category: 'TASK', step: 'run', message: 'a warning on stderr', session_id: session }));
    appendFileSync(file, line({ timestamp: at(5), level: 'info', category: 'TASK_HISTORY', step: 'finish', message: 'Task ended: success', session_id: session, status: 'success', duration_seconds: 5, session_end: true }));
  });
  after(async () => svc.stop());

  const stream = async (path: string): Promise<{ status: number; type: string | null; events: SseEvent[] }> => {
    const reply = await svc.client().get(path);
    return { status: reply.status, type: reply.headers.get('content-type'), events: reply.status === 200 ? sseEvents(reply.text) : [] };
  };
  const names = (events: SseEvent[]): string[] => events.map((event) => event.event);

  describe('GET /logs/listItems/{folder_path}', () => {
    it('given the root (no folder path, with or without the slash), when listed, then status, data with the category folders, done', async () => {
      for (const path of ['/api/v1/logs/listItems', '/api/v1/logs/listItems/']) {
        const reply = await stream(path);
        expect(reply.status).to.equal(200);
        expect(reply.type).to.match(/^text\/event-stream/);
        expect(names(reply.events)).to.deep.equal(['status', 'data', 'done']);
        expect(reply.events[0]?.data).to.deep.equal({ state: 'processing' });
        expect(reply.events[2]?.data).to.deep.equal({ state: 'complete' });
        const data = reply.events[1]?.data as { directory: string; items: Array<Record<string, unknown>>; total_count: number };
        expect(data.directory).to.equal('');
        const task = data.items.find((item) => item.name === 'TASK');
        expect(task).to.include({ name: 'TASK', type: 'directory', size: 0, path: 'TASK' });
        expect(Number.isNaN(Date.parse(String(task?.modified)))).to.equal(false);
        expect(data.items.map((item) => item.name)).to.include.members(['CRON', 'TASK', 'sessions']);
        expect(data.total_count).to.equal(data.items.length);
      }
    });

    it('given a folder, when listed, then its files with name, type, size, modified and a path the file route takes, by name', async () => {
      const reply = await stream('/api/v1/logs/listItems/TASK');
      expect(names(reply.events)).to.deep.equal(['status', 'data', 'done']);
      const data = reply.events[1]?.data as { directory: string; items: Array<Record<string, unknown>>; total_count: number };
      expect(data.directory).to.equal('TASK');
      expect(data.total_count).to.equal(2);
      expect(data.items.map((item) => ({ ...item, modified: typeof item.modified }))).to.deep.equal([
        { name: '2026-01-01.jsonl', type: 'file', size: Buffer.byteLength(taskDay), modified: 'string', path: 'TASK/2026-01-01.jsonl' },
        { name: '2026-01-02.jsonl', type: 'file', size: 0, modified: 'string', path: 'TASK/2026-01-02.jsonl' },
      ]);
    });

    it('given a nested folder with a trailing slash, when listed, then it is listed (sessions/<day>)', async () => {
      const reply = await stream('/api/v1/logs/listItems/sessions/2026-01-01/');
      const data = reply.events[1]?.data as { directory: string; items: Array<Record<string, unknown>> };
      expect(data.directory).to.equal('sessions/2026-01-01');
      expect(data.items).to.have.length(1);
      expect(data.items[0]).to.include({ name: '100000.jsonl', type: 'file', path: 'sessions/2026-01-01/100000.jsonl' });
    });

    it('given a folder that is not there, or a file, when listed, then status then the error event (HTTP 200), no data', async () => {
      for (const path of ['/api/v1/logs/listItems/NOPE', '/api/v1/logs/listItems/TASK/2026-01-01.jsonl']) {
        const reply = await stream(path);
        expect(reply.status).to.equal(200);
        expect(reply.events).to.deep.equal([
          { event: 'status', data: { state: 'processing' } },
          { event: 'error', data: { message: 'Directory not found' } },
        ]);
      }
    });
  });

  describe('GET /logs/file/{file_path}', () => {
    it('given a file, when read in normal mode, then metadata, chunks that make up the file (characters never split), done with total_chunks', async () => {
      const reply = await stream('/api/v1/logs/file/CRON/2026-01-03.jsonl');
      expect(reply.status).to.equal(200);
      const [status, metadata, ...rest] = reply.events;
      expect(status).to.deep.equal({ event: 'status', data: { state: 'processing' } });
      expect(metadata?.event).to.equal('metadata');
      expect(Object.keys(metadata?.data ?? {})).to.deep.equal(['name', 'path', 'size', 'modified']);
      expect(metadata?.data).to.include({ name: '2026-01-03.jsonl', path: 'CRON/2026-01-03.jsonl', size: Buffer.byteLength(big) });
      const chunks = rest.slice(0, -1);
      expect(chunks.length).to.be.greaterThan(1);
      expect(chunks.every((chunk) => chunk.event === 'chunk' && Object.keys(chunk.data).join() === 'content')).to.equal(true);
      expect(chunks.map((chunk) => chunk.data.content).join('')).to.equal(big);
      expect(rest.at(-1)).to.deep.equal({ event: 'done', data: { state: 'complete', total_chunks: chunks.length } });
    });

    it('given an empty file, when read, then metadata of size 0 and done with no chunks', async () => {
      const reply = await stream('/api/v1/logs/file/TASK/2026-01-02.jsonl');
      expect(names(reply.events)).to.deep.equal(['status', 'metadata', 'done']);
      expect(reply.events[2]?.data).to.deep.equal({ state: 'complete', total_chunks: 0 });
    });

    it('given reverse=true with skip and limit, when read, then metadata without modified and one line per chunk, newest first', async () => {
      const reply = await stream('/api/v1/logs/file/TASK/2026-01-01.jsonl?reverse=true&skip=2&limit=3');
      expect(names(reply.events)).to.deep.equal(['status', 'metadata', 'chunk', 'chunk', 'chunk', 'done']);
      expect(Object.keys(reply.events[1]?.data ?? {})).to.deep.equal(['name', 'path', 'size']);
      expect(reply.events.slice(2, 5).map((event) => JSON.parse(String(event.data.content)).message)).to.deep.equal(['line 298', 'line 297', 'line 296']);
      expect(reply.events[5]?.data).to.deep.equal({ state: 'complete', total_chunks: 3 });
    });

    it('given reverse=true alone, when read, then the default limit of 200 lines; past the start, what is left', async () => {
      const reply = await stream('/api/v1/logs/file/TASK/2026-01-01.jsonl?reverse=true');
      expect(reply.events.filter((event) => event.event === 'chunk')).to.have.length(200);
      expect(reply.events.at(-1)?.data).to.deep.equal({ state: 'complete', total_chunks: 200 });
      const tail = await stream('/api/v1/logs/file/TASK/2026-01-01.jsonl?reverse=1&skip=295&limit=5000');
      expect(tail.events.filter((event) => event.event === 'chunk').map((event) => JSON.parse(String(event.data.content)).message)).to.deep.equal(['line 5', 'line 4', 'line 3', 'line 2', 'line 1']);
    });

    it('given a file that is not there, a directory or no path, when read, then status then the error event, no metadata', async () => {
      for (const path of ['/api/v1/logs/file/TASK/2099-01-01.jsonl', '/api/v1/logs/file/TASK', '/api/v1/logs/file/', '/api/v1/logs/file']) {
        const reply = await stream(path);
        expect(reply.status, path).to.equal(200);
        expect(reply.events, path).to.deep.equal([
          { event: 'status', data: { state: 'processing' } },
          { event: 'error', data: { message: 'File not found' } },
        ]);
      }
    });

    it('given skip or limit out of bounds (or not numbers, or reverse not a boolean), when read, then 422 in the list form, in either mode', async () => {
      const cases: Array<[string, Record<string, unknown>]> = [
        ['limit=0', { type: 'greater_than_equal', loc: ['query', 'limit'], msg: 'Input should be greater than or equal to 1', input: 0 }],
        ['limit=5001&reverse=true', { type: 'less_than_equal', loc: ['query', 'limit'], msg: 'Input should be less than or equal to 5000', input: 5001 }],
        ['skip=-1&reverse=true', { type: 'greater_than_equal', loc: ['query', 'skip'], msg: 'Input should be greater than or equal to 0', input: -1 }],
        ['limit=ten', { type: 'int_type', loc: ['query', 'limit'], msg: 'Input should be a valid integer', input: 'ten' }],
        ['reverse=maybe', { type: 'bool_type', loc: ['query', 'reverse'], msg: 'Input should be a valid boolean', input: 'maybe' }],
      ];
      for (const [query, entry] of cases) {
        const reply = await svc.client().get(`/api/v1/logs/file/TASK/2026-01-01.jsonl?${query}`);
        expect(reply.status, query).to.equal(422);
        expect(reply.json, query).to.deep.equal({ detail: [entry] });
      }
      const both = await svc.client().get('/api/v1/logs/file/TASK/2026-01-01.jsonl?skip=-1&limit=5001');
      expect((both.json as { detail: Array<{ loc: string[] }> }).detail.map((entry) => entry.loc[1])).to.have.members(['skip', 'limit']);
      const edges = await stream('/api/v1/logs/file/TASK/2026-01-01.jsonl?reverse=true&skip=0&limit=5000');
      expect(edges.events.at(-1)?.data).to.deep.equal({ state: 'complete', total_chunks: 300 });
    });
  });

  describe('GET /logs/session/{session_id}', () => {
    it('given a finished session, when streamed, then status, its lines as log events in order (neighbours and a cut line left out), done with total_count', async () => {
      const reply = await stream(`/api/v1/logs/session/${session}`);
      expect(reply.status).to.equal(200);
      expect(reply.type).to.match(/^text\/event-stream/);
      expect(names(reply.events)).to.deep.equal(['status', 'log', 'log', 'log', 'log', 'done']);
      const logsSent = reply.events.slice(1, 5).map((event) => event.data);
      expect(logsSent.map((entry) => entry.message)).to.deep.equal(['picked up', 'hello from the operator', 'a warning on stderr', 'Task ended: success']);
      expect(logsSent[0]).to.include({ timestamp: '2026-01-01T10:00:00.000Z', level: 'info', task_laui: session, session_id: session });
      expect(logsSent[3]).to.include({ status: 'success', duration_seconds: 5, session_end: true });
      expect(reply.events[5]?.data).to.deep.equal({ state: 'complete', total_count: 4 });
    });

    it('given an unknown session (an id with no file, a file without its lines, an id that is no session id), when streamed, then the error event', async () => {
      const unknown = [newLaui(new Date('2025-06-01T00:00:00Z')), newLaui(new Date('2026-01-01T10:00:00Z')), 'not-a-session', '..%2f..%2fetc', 'x'.repeat(200)];
      for (const id of unknown) {
        const reply = await stream(`/api/v1/logs/session/${id}`);
        expect(reply.status, id).to.equal(200);
        expect(reply.events, id).to.deep.equal([
          { event: 'status', data: { state: 'processing' } },
          { event: 'error', data: { message: 'Session not found' } },
        ]);
      }
    });
  });

  describe('GET /logs/session/{session_id}/content', () => {
    const content = async (query: string) => {
      const reply = await svc.client().get(`/api/v1/logs/session/${session}/content${query}`);
      expect(reply.status, reply.text).to.equal(200);
      return reply.json as { items: Array<Record<string, unknown>>; pagination: Record<string, unknown> };
    };

    it('given a session, when its content is read, then a page of its entries and the pagination (defaults page 1, per_page 50)', async () => {
      const page = await content('');
      expect(page.items.map((item) => item.message)).to.deep.equal(['picked up', 'hello from the operator', 'a warning on stderr', 'Task ended: success']);
      expect(page.items[0]).to.include({ timestamp: '2026-01-01T10:00:00.000Z', level: 'info', category: 'CELERY', session_id: session });
      expect(page.pagination).to.deep.equal({ current_page: 1, per_page: 50, has_next: false });
    });

    it('given page and per_page, when read, then that page and whether another follows', async () => {
      expect(await content('?per_page=3')).to.deep.include({ pagination: { current_page: 1, per_page: 3, has_next: true } });
      const second = await content('?per_page=3&page=2');
      expect(second.items.map((item) => item.message)).to.deep.equal(['Task ended: success']);
      expect(second.pagination).to.deep.equal({ current_page: 2, per_page: 3, has_next: false });
      const past = await content('?per_page=2&page=9');
      expect(past).to.deep.equal({ items: [], pagination: { current_page: 9, per_page: 2, has_next: false } });
      expect((await content('?per_page=2&page=2')).pagination).to.deep.equal({ current_page: 2, per_page: 2, has_next: false });
    });

    it('given level and category filters, when read, then only matching entries (compared without regard to case)', async () => {
      expect((await content('?level=error')).items.map((item) => item.message)).to.deep.equal(['a warning on stderr']);
      expect((await content('?level=ERROR&category=task')).items.map((item) => item.message)).to.deep.equal(['a warning on stderr']);
      expect((await content('?category=TASK_HISTORY')).items.map((item) => item.message)).to.deep.equal(['Task ended: success']);
      expect((await content('?level=critical')).items).to.deep.equal([]);
    });

    it('given an unknown session, when read, then an empty page', async () => {
      const reply = await svc.client().get(`/api/v1/logs/session/${newLaui(new Date('2025-06-01T00:00:00Z'))}/content`);
      expect(reply.status).to.equal(200);
      expect(reply.json).to.deep.equal({ items: [], pagination: { current_page: 1, per_page: 50, has_next: false } });
    });

    it('given page or per_page out of bounds, when read, then 422 in the list form', async () => {
      const cases: Array<[string, Record<string, unknown>]> = [
        ['per_page=0', { type: 'greater_than_equal', loc: ['query', 'per_page'], msg: 'Input should be greater than or equal to 1', input: 0 }],
        ['per_page=501', { type: 'less_than_equal', loc: ['query', 'per_page'], msg: 'Input should be less than or equal to 500', input: 501 }],
        ['page=0', { type: 'greater_than_equal', loc: ['query', 'page'], msg: 'Input should be greater than or equal to 1', input: 0 }],
        ['page=first', { type: 'int_type', loc: ['query', 'page'], msg: 'Input should be a valid integer', input: 'first' }],
      ];
      for (const [query, entry] of cases) {
        const reply = await svc.client().get(`/api/v1/logs/session/${session}/content?${query}`);
        expect(reply.status, query).to.equal(422);
        expect(reply.json, query).to.deep.equal({ detail: [entry] });
      }
      expect((await content('?per_page=500&page=1')).pagination).to.deep.equal({ current_page: 1, per_page: 500, has_next: false });
    });
  });

  it('given no token at all (the default settings), when any logs route is called, then it answers (the routes are public, spec 5.1)', async () => {
    expect((await stream('/api/v1/logs/listItems')).status).to.equal(200);
    expect((await svc.client().get(`/api/v1/logs/session/${session}/content`)).status).to.equal(200);
  });
  // Last: its lines go to today's files, which the listings above do not expect.
  describe('lines the logger holds', () => {
    it('given lines the service just logged (its logger writes them in batches), when read at once through the routes, then every read sees them: session content, session stream, the file and a query', async () => {
      // Given: a run's session lines, logged and not flushed.
      const fresh = newLaui(new Date());
      svc.service.logger.log({ level: 'info', category: 'TASK', step: 'run', message: 'just now', session_id: fresh });
      svc.service.logger.log({ level: 'info', category: 'TASK_HISTORY', step: 'finish', message: 'ended', session_id: fresh, session_end: true });
      // When / then: each read at once.
      const content = (await svc.client().get(`/api/v1/logs/session/${fresh}/content`)).json as { lines?: unknown[]; items?: unknown[] };
      expect(JSON.stringify(content)).to.include('just now');
      const followed = await stream(`/api/v1/logs/session/${fresh}`);
      expect(followed.events.filter((event) => event.event === 'log')).to.have.length(2);
      svc.service.logger.log({ level: 'info', category: 'TASK', step: 'run', message: 'for the file route', session_id: fresh });
      const day = new Date().toISOString().slice(0, 10);
      const file = await stream(`/api/v1/logs/file/TASK/${day}.jsonl`);
      expect(JSON.stringify(file.events)).to.include('for the file route');
      svc.service.logger.log({ level: 'info', category: 'TASK', step: 'run', message: 'for the query', session_id: fresh });
      const queried = await svc.client().request('POST', '/api/v1/logs/query', {
        body: JSON.stringify({ category: 'TASK', date: day, sql: "SELECT count(*) AS n FROM logs WHERE message = 'for the query'" }),
        headers: { 'content-type': 'application/json' },
      });
      expect(queried.json, JSON.stringify(queried.json)).to.deep.include({ columns: ['n'], rows: [[1]] });
    });
  });
});
