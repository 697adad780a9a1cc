import { expect } from 'chai';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixedClock } from '../../shared/clock.ts';
import { LOG_CATEGORIES } from '../../shared/ports/Logger.ts';
import { JsonLinesLogger } from './JsonLinesLogger.ts';
import { findSessionLogFile } from './sessionLogFile.ts';

/** An ObjectId session id whose first 4 bytes say it started at `iso`. */
const startedAt = (iso: string, tail: string) => Math.floor(Date.parse(iso) / 1000).toString(16) + tail;

describe('the logs root and findSessionLogFile', () => {
  let root: string;
  beforeEach(() => {
    root = join(mkdtempSync(join(tmpdir(), 'logs-root-')), 'logs');
  });
  afterEach(() => rmSync(join(root, '..'), { recursive: true, force: true }));

  it('given a new logger, when made, then the root holds one folder per category, named as the category, and the session index', async () => {
    const logger = new JsonLinesLogger(root, fixedClock(new Date('2026-03-01T10:00:00Z')));
    expect(readdirSync(root).sort()).to.deep.equal([...LOG_CATEGORIES, 'sessions'].sort());
    expect(readdirSync(root)).to.include.members(['TASK', 'TASK_HISTORY', 'API', 'PERFORMANCE', 'CRON', 'CELERY']);
    await logger.close();
  });

  it('given ObjectId sessions logged, when looked up, then each session\'s file is found, and a session without lines has none', async () => {
    const logger = new JsonLinesLogger(root, fixedClock(new Date('2026-03-02T00:00:05Z')));
    const a = startedAt('2026-03-01T23:59:58Z', 'aaaaaaaaaaaaaaaa');
    const b = startedAt('2026-03-01T23:59:58Z', 'bbbbbbbbbbbbbbbb');
    const unseen = startedAt('2026-03-01T12:00:00Z', 'cccccccccccccccc');
    logger.log({ level: 'info', category: 'TASK', message: 'a1', session_id: a });
    logger.log({ level: 'info', category: 'TASK', message: 'b1', session_id: b });
    await logger.close();
    const file = findSessionLogFile(root, a);
    expect(file).to.equal(join(root, 'sessions', '2026-03-01', '235958.jsonl'));
    // One file per start second: the reader keeps its own session's lines.
    expect(findSessionLogFile(root, b)).to.equal(file);
    expect(readFileSync(String(file), 'utf8').trim().split('\n').map((line) => (JSON.parse(line) as { message: string }).message)).to.deep.equal(['a1', 'b1']);
    expect(findSessionLogFile(root, unseen)).to.equal(null);
  });

  it('given sessions that are no ObjectIds, when looked up, then the day file naming the session is found, and ids the logger never files find nothing', async () => {
    const clock = fixedClock(new Date('2026-03-01T10:00:00Z'));
    const logger = new JsonLinesLogger(root, clock);
    logger.log({ level: 'info', category: 'TASK', message: 'first day', session_id: 'run-1' });
    clock.advance(24 * 3600 * 1000);
    logger.log({ level: 'info', category: 'TASK', message: 'second day', session_id: 'run-2' });
    await logger.close();
    expect(findSessionLogFile(root, 'run-1')).to.equal(join(root, 'sessions', '2026-03-01', 'other.jsonl'));
    expect(findSessionLogFile(root, 'run-2')).to.equal(join(root, 'sessions', '2026-03-02', 'other.jsonl'));
    // A prefix of a logged id is another session.
    expect(findSessionLogFile(root, 'run-')).to.equal(null);
    for (const hostile of ['../../etc/passwd', '/etc/passwd', '..', '', 'a b', 'x'.repeat(200)]) expect(findSessionLogFile(root, hostile), hostile).to.equal(null);
  });

  it('given a large day file of such sessions, when the id is at its end, across a read boundary, then it is found', () => {
    const day = join(root, 'sessions', '2026-03-01');
    mkdirSync(day, { recursive: true });
    const filler = `${JSON.stringify({ message: 'y'.repeat(1000), session_id: 'other' })}\n`.repeat(70);
    for (let shift = 0; shift < 40; shift += 7) {
      writeFileSync(join(day, 'other.jsonl'), `${'z'.repeat(65_536 - 20 + shift)}\n${filler}${JSON.stringify({ message: 'late', session_id: 'needle-1' })}\n`);
      expect(findSessionLogFile(root, 'needle-1'), `shift ${shift}`).to.equal(join(day, 'other.jsonl'));
    }
    writeFileSync(join(day, 'other.jsonl'), `${'z'.repeat(65_530)}"session_id":"needle-1"\n`);
    expect(findSessionLogFile(root, 'needle-1')).to.equal(join(day, 'other.jsonl'));
  });
});
