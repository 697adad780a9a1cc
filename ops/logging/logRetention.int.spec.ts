import { expect } from 'chai';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixedClock } from '../../shared/clock.ts';
import { startLogRetention, sweepLogs } from './logRetention.ts';

const DAY = 24 * 3600 * 1000;

describe('log retention (LOG_RETENTION_DAYS)', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'retention-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  /** A file under the root, last written at `at`. */
  const file = (path: string, at: Date) => {
    const full = join(root, path);
    mkdirSync(join(full, '..'), { recursive: true });
    writeFileSync(full, '{}\n');
    utimesSync(full, at, at);
  };
  const exists = (path: string) => existsSync(join(root, path));

  it('given day files and session files around the cutoff, when swept with 30 days, then only what is older than 30 days goes', async () => {
    const now = new Date('2026-03-31T10:00:00Z');
    // now - 30 days = 2026-03-01T10:00Z: day files of 2026-02-28 and before are wholly older.
    file('TASK/2026-02-28.jsonl', new Date('2026-03-01T00:00:00Z'));
    file('TASK/2026-03-01.jsonl', new Date('2026-03-02T00:00:00Z'));
    file('API/2025-12-31.jsonl', new Date('2026-01-01T00:00:00Z'));
    file('CELERY/2026-03-31.jsonl', now);
    file('TASK/notes.txt', new Date('2020-01-01T00:00:00Z'));
    file('elsewhere/2020-01-01.jsonl', new Date('2020-01-01T00:00:00Z'));
    // Sessions: by start day, and a file still written lately stays.
    file('sessions/2026-02-20/101500.jsonl', new Date('2026-02-20T10:16:00Z'));
    file('sessions/2026-02-20/other.jsonl', new Date('2026-02-20T23:00:00Z'));
    file('sessions/2026-02-27/090000.jsonl', new Date('2026-03-15T09:00:00Z'));
    file('sessions/2026-03-05/090000.jsonl', new Date('2026-03-05T09:00:00Z'));

    const removed = await sweepLogs(root, 30, now);

    expect(removed).to.equal(4);
    expect(exists('TASK/2026-02-28.jsonl')).to.equal(false);
    expect(exists('API/2025-12-31.jsonl')).to.equal(false);
    expect(exists('TASK/2026-03-01.jsonl')).to.equal(true);
    expect(exists('CELERY/2026-03-31.jsonl')).to.equal(true);
    expect(exists('TASK/notes.txt')).to.equal(true);
    expect(exists('elsewhere/2020-01-01.jsonl')).to.equal(true);
    expect(exists('sessions/2026-02-20')).to.equal(false);
    expect(exists('sessions/2026-02-27/090000.jsonl')).to.equal(true);
    expect(exists('sessions/2026-03-05/090000.jsonl')).to.equal(true);
  });

  it('given the retention started, when it starts and when the clock passes more days, then each sweep removes what aged out by then', async () => {
    const clock = fixedClock(new Date('2026-03-10T12:00:00Z'));
    file('TASK/2026-03-01.jsonl', new Date('2026-03-02T00:00:00Z'));
    file('TASK/2026-03-05.jsonl', new Date('2026-03-06T00:00:00Z'));
    file('TASK/2026-03-10.jsonl', new Date('2026-03-10T12:00:00Z'));
    const retention = startLogRetention({ root, days: 7, clock, everyMs: 30 });
    try {
      // At start: 2026-03-01 is more than 7 days old.
      const deadline = Date.now() + 5000;
      while (exists('TASK/2026-03-01.jsonl') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(readdirSync(join(root, 'TASK')).sort()).to.deep.equal(['2026-03-05.jsonl', '2026-03-10.jsonl']);
      // Days pass: the timer's next sweep sees the new now.
      clock.advance(5 * DAY);
      while (exists('TASK/2026-03-05.jsonl') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(readdirSync(join(root, 'TASK'))).to.deep.equal(['2026-03-10.jsonl']);
    } finally {
      await retention.stop();
    }
    expect(await retention.sweep()).to.equal(0);
  });

  it('given a sweep that fails, when the next one comes, then the failure was reported and the next sweep runs', async () => {
    const errors: unknown[] = [];
    const clock = fixedClock(new Date('2026-03-10T12:00:00Z'));
    // The first sweep (at start) throws: its clock gives an invalid date.
    const broken = { now: () => (errors.length === 0 && clock.now().getTime() < Date.parse('2026-03-11T00:00:00Z') ? new Date(Number.NaN) : clock.now()) };
    const retention = startLogRetention({ root, days: 7, clock: broken, everyMs: 3_600_000, onError: (error) => errors.push(error) });
    try {
      await retention.sweep().catch(() => undefined);
      expect(errors).to.have.length(1);
      file('TASK/2026-03-01.jsonl', new Date('2026-03-02T00:00:00Z'));
      clock.advance(DAY);
      expect(await retention.sweep()).to.equal(1);
    } finally {
      await retention.stop();
    }
  });
});
