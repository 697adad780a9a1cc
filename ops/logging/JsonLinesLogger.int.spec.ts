import { expect } from 'chai';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixedClock } from '../../shared/clock.ts';
import { JsonLinesLogger } from './JsonLinesLogger.ts';
import { readSessionLog } from './sessionLogFile.ts';

const lines = (path: string) =>
  readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('JsonLinesLogger', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'logs-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('given entries of two categories, when logged, then each lands in its category file for the UTC day', async () => {
    const clock = fixedClock(new Date('2026-03-01T23:59:59Z'));
    const logger = new JsonLinesLogger(dir, clock);
    logger.log({ level: 'info', category: 'API', message: 'GET /x 200' });
    logger.log({ level: 'info', category: 'PERFORMANCE', message: '{"execution_time":0.1,"error":null}', operation: 'GET /x' });
    clock.advance(2000);
    logger.log({ level: 'warning', category: 'API', message: 'next day' });
    await logger.close();
    expect(lines(join(dir, 'API', '2026-03-01.jsonl'))).to.deep.equal([
      { timestamp: '2026-03-01T23:59:59.000Z', level: 'info', category: 'API', message: 'GET /x 200' },
    ]);
    expect(lines(join(dir, 'API', '2026-03-02.jsonl'))[0]?.message).to.equal('next day');
    expect(lines(join(dir, 'PERFORMANCE', '2026-03-01.jsonl'))[0]?.operation).to.equal('GET /x');
  });

  it('given lines of sessions that are no ObjectIds, when logged, then each session reads back exactly its lines, from the day file of such sessions', async () => {
    const logger = new JsonLinesLogger(dir, fixedClock(new Date('2026-03-01T10:00:00Z')));
    logger.log({ level: 'info', category: 'TASK', message: 'start', session_id: 's-1', task_laui: 'a'.repeat(24) });
    logger.log({ level: 'info', category: 'TASK', message: 'other', session_id: 's-2' });
    logger.log({ level: 'error', category: 'TASK_HISTORY', message: 'end', session_id: 's-1' });
    logger.log({ level: 'info', category: 'TASK', message: 'escape', session_id: '../../etc' });
    await logger.close();
    expect(readSessionLog(dir, 's-1').map((line) => line.message)).to.deep.equal(['start', 'end']);
    expect(readSessionLog(dir, 's-2').map((line) => line.message)).to.deep.equal(['other']);
    expect(readdirSync(join(dir, 'sessions'))).to.deep.equal(['2026-03-01']);
    expect(readdirSync(join(dir, 'sessions', '2026-03-01'))).to.deep.equal(['other.jsonl']);
    expect(lines(join(dir, 'TASK', '2026-03-01.jsonl'))).to.have.length(3);
  });

  it('given ObjectId sessions started in two seconds and logging on the next day, when logged, then each session\'s lines are in the file of the second it started', async () => {
    const clock = fixedClock(new Date('2026-03-02T00:00:05Z'));
    const logger = new JsonLinesLogger(dir, clock);
    const startedAt = (iso: string, tail: string) => Math.floor(Date.parse(iso) / 1000).toString(16) + tail;
    const a = startedAt('2026-03-01T23:59:58Z', '0000000000aaaaaaaaaaaaaa'.slice(8));
    const b = startedAt('2026-03-01T23:59:58Z', '0000000000bbbbbbbbbbbbbb'.slice(8));
    const c = startedAt('2026-03-02T00:00:01Z', '0000000000cccccccccccccc'.slice(8));
    logger.log({ level: 'info', category: 'TASK', message: 'a1', session_id: a });
    logger.log({ level: 'info', category: 'TASK', message: 'c1', session_id: c });
    logger.log({ level: 'info', category: 'TASK', message: 'b1', session_id: b });
    clock.advance(3_600_000);
    logger.log({ level: 'info', category: 'TASK_HISTORY', message: 'a2', session_id: a });
    await logger.close();
    expect(readdirSync(join(dir, 'sessions', '2026-03-01'))).to.deep.equal(['235958.jsonl']);
    expect(readdirSync(join(dir, 'sessions', '2026-03-02'))).to.deep.equal(['000001.jsonl']);
    expect(readSessionLog(dir, a).map((line) => line.message)).to.deep.equal(['a1', 'a2']);
    expect(readSessionLog(dir, b).map((line) => line.message)).to.deep.equal(['b1']);
    expect(readSessionLog(dir, c).map((line) => line.message)).to.deep.equal(['c1']);
  });

  it('given lines logged without a flush, when a moment passes, then they reach the file in order', async () => {
    const logger = new JsonLinesLogger(dir, fixedClock(new Date('2026-03-01T10:00:00Z')));
    for (let n = 0; n < 50; n += 1) logger.log({ level: 'info', category: 'API', message: `line ${n}` });
    // Not yet: lines wait to be written with those that follow them.
    const file = join(dir, 'API', '2026-03-01.jsonl');
    expect(existsSync(file) ? readFileSync(file, 'utf8') : '').to.equal('');
    const deadline = Date.now() + 2000;
    let written: Array<Record<string, unknown>> = [];
    while (Date.now() < deadline && written.length < 50) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      try {
        written = lines(file);
      } catch {
        written = [];
      }
    }
    expect(written.map((line) => line.message)).to.deep.equal(Array.from({ length: 50 }, (_, n) => `line ${n}`));
    await logger.close();
  });

  it('given lines of many sizes and scripts, some longer than a buffer chunk, when drained, then every byte reaches the file in order', async () => {
    // Given: ~20 chunks' worth of lines, multi-byte text among them, and two lines larger than a chunk
    const logger = new JsonLinesLogger(dir, fixedClock(new Date('2026-03-01T10:00:00Z')));
    const messages: string[] = [];
    for (let n = 0; n < 3000; n += 1) {
      const size = n % 7 === 0 ? 1200 : 40;
      messages.push(`${n}: ${(n % 3 === 0 ? 'ü€😀' : 'ab').repeat(size / 4)}`);
    }
    messages.splice(1000, 0, 'x'.repeat(100_000));
    messages.splice(2000, 0, '€'.repeat(30_000));

    // When
    for (const message of messages) logger.log({ level: 'info', category: 'API', message });
    await logger.flush();

    // Then
    expect(lines(join(dir, 'API', '2026-03-01.jsonl')).map((line) => line.message)).to.deep.equal(messages);
    await logger.close();
  });
});
