import { expect } from 'chai';
import type { LogEntry, Logger } from '../ports/Logger.ts';
import { runSessionLog } from './runSessionLog.ts';

const SESSION = '65a0000000000000000000aa';

/** A Logger that keeps what it is given. */
const memoryLogger = () => {
  const entries: LogEntry[] = [];
  const logger: Logger = { log: (entry) => entries.push(entry), flush: async () => undefined };
  return { logger, entries };
};

describe('runSessionLog: one run\'s lines under its session', () => {
  it('given output lines of each stream, when handed on, then each is a TASK entry of the session with the run\'s fields, its level by stream and its step', () => {
    const { logger, entries } = memoryLogger();
    const session = runSessionLog(logger, SESSION, { task_laui: 'a'.repeat(24), task_name: 'nightly', logical_date: '2026-03-01T00:00:00.000Z' }, { category: 'TASK' });
    const output = session.output();
    output.line({ stream: 'stdout', step: 'run', text: 'hello' });
    output.line({ stream: 'stderr', step: 'check_completion', text: 'warned' });
    output.line({ stream: 'runner', step: 'finish', text: 'finish is called in a fresh process' });
    output.line({ stream: 'stdout', step: 'run', text: 'x'.repeat(10), cutBytes: 90, partial: true });
    const run = { session_id: SESSION, task_laui: 'a'.repeat(24), task_name: 'nightly', logical_date: '2026-03-01T00:00:00.000Z', category: 'TASK' };
    expect(entries).to.deep.equal([
      { ...run, level: 'info', step: 'run', message: 'hello', stream: 'stdout' },
      { ...run, level: 'error', step: 'check_completion', message: 'warned', stream: 'stderr' },
      { ...run, level: 'warning', step: 'finish', message: 'finish is called in a fresh process', stream: 'runner' },
      { ...run, level: 'info', step: 'run', message: 'x'.repeat(10), stream: 'stdout', cut_bytes: 90, partial: true },
    ]);
  });

  it('given lines over the cap, when reported, then one warning says how many lines and bytes were not logged, and the cap', () => {
    const { logger, entries } = memoryLogger();
    runSessionLog(logger, SESSION, {}, { category: 'TASK' }).output().dropped({ lines: 90_000, bytes: 488_890, maxLines: 10_000, maxBytes: 1_048_576 });
    expect(entries).to.have.length(1);
    expect(entries[0]).to.include({ level: 'warning', category: 'TASK', step: 'output', session_id: SESSION, dropped_lines: 90_000, dropped_bytes: 488_890 });
    expect(entries[0]?.message).to.equal('90000 more lines (488890 bytes) of output were not logged: a run logs at most 10000 lines and 1048576 bytes of output');
  });

  it('given the connection\'s secrets, when lines show them, then they are masked (the longest first), and the secrets are only asked for at the first line', () => {
    const { logger, entries } = memoryLogger();
    let asked = 0;
    const output = runSessionLog(logger, SESSION, {}, { category: 'TASK' }).output(() => {
      asked += 1;
      return ['hunter2', 'hunter22-long'];
    });
    expect(asked).to.equal(0);
    output.line({ stream: 'stdout', step: 'run', text: 'pw=hunter22-long, again hunter2 and hunter2' });
    output.line({ stream: 'stderr', step: 'run', text: 'nothing secret' });
    expect(entries.map((entry) => entry.message)).to.deep.equal(['pw=********, again ******** and ********', 'nothing secret']);
    expect(asked).to.equal(1);
  });

  it('given the end line, when more lines come, then the end line stays the session\'s last: later lines keep the run as run_session_id only', () => {
    const { logger, entries } = memoryLogger();
    const session = runSessionLog(logger, SESSION, { task_name: 'nightly' }, { category: 'TASK' });
    session.log({ level: 'info', category: 'CELERY', step: 'pickup', message: 'picked up' });
    expect(session.ended).to.equal(false);
    session.end({ level: 'info', category: 'TASK_HISTORY', step: 'finish', message: 'ended success', status: 'success' });
    expect(session.ended).to.equal(true);
    session.log({ level: 'error', category: 'TASK', step: 'post-action', message: 'Post actions failed to run' });
    session.end({ level: 'error', category: 'TASK_HISTORY', step: 'finish', message: 'again' });
    expect(entries.map((entry) => [entry.session_id, entry.run_session_id, entry.session_end])).to.deep.equal([
      [SESSION, undefined, undefined],
      [SESSION, undefined, true],
      [undefined, SESSION, undefined],
      [undefined, SESSION, undefined],
    ]);
    expect(entries[2]).to.include({ task_name: 'nightly', step: 'post-action' });
  });

  it('given a step mapping (actions), when lines come, then they are logged under the mapped step', () => {
    const { logger, entries } = memoryLogger();
    runSessionLog(logger, SESSION, {}, { category: 'TASK', step: () => 'action' }).output().line({ stream: 'stdout', step: 'load', text: 'imported' });
    expect(entries[0]).to.include({ step: 'action', message: 'imported' });
  });
});
