import { expect } from 'chai';
import { AppError } from '../../shared/errors.ts';
import { decideCron, isCronAlive, CRON_ALREADY_RUNNING, type CronContext } from '../../command-side/cron/cronLifecycle.ts';

const now = new Date('2024-06-10T12:00:00.000Z');
const seconds = (n: number) => new Date(now.getTime() - n * 1000).toISOString();
const context = (liveBeatSecondsAgo: number | null, intervalSeconds = 5): CronContext => ({
  now,
  liveBeat: liveBeatSecondsAgo === null ? null : new Date(now.getTime() - liveBeatSecondsAgo * 1000),
  intervalSeconds,
});

describe('project cron lifecycle (spec 3.3)', () => {
  it('given no cron, when started, then STARTED with start_date and heartbeat now, stop_date and error null', () => {
    expect(decideCron({ kind: 'start' }, {}, context(null))).to.deep.equal({
      cron_status: 'STARTED',
      latest_heartbeat: now.toISOString(),
      start_date: now.toISOString(),
      stop_date: null,
      error: null,
    });
  });

  it('given a running cron beating within 3 intervals, when started again, then 409', () => {
    for (const status of ['STARTED', 'RUNNING']) {
      expect(() => decideCron({ kind: 'start' }, { cron_status: status, latest_heartbeat: seconds(100) }, context(14)))
        .to.throw(AppError)
        .with.property('status', 409);
    }
    // The persisted heartbeat counts too (a START seconds ago, no loop beat yet).
    expect(() => decideCron({ kind: 'start' }, { cron_status: 'STARTED', latest_heartbeat: seconds(2) }, context(null))).to.throw(CRON_ALREADY_RUNNING);
  });

  it('given a running cron whose heartbeat is older than 3 intervals, when started, then the START takes over', () => {
    expect(decideCron({ kind: 'start' }, { cron_status: 'RUNNING', latest_heartbeat: seconds(16) }, context(16))?.cron_status).to.equal('STARTED');
  });

  it('given STOPPED, ERROR or a STOP in progress, when started, then STARTED', () => {
    for (const status of ['STOPPED', 'ERROR', 'STOP']) {
      expect(decideCron({ kind: 'start' }, { cron_status: status, latest_heartbeat: seconds(1) }, context(1))?.cron_status).to.equal('STARTED');
    }
  });

  it('given a live cron, when stopped, then STOP (the loop writes STOPPED); with a dead heartbeat, STOPPED at once', () => {
    expect(decideCron({ kind: 'stop' }, { cron_status: 'RUNNING' }, context(1))).to.deep.equal({ cron_status: 'STOP' });
    expect(decideCron({ kind: 'stop' }, { cron_status: 'RUNNING', latest_heartbeat: seconds(60) }, context(60))).to.deep.equal({
      cron_status: 'STOPPED',
      stop_date: now.toISOString(),
    });
  });

  it('given no cron or a stopped one, when stopped, then nothing changes; given ERROR, then STOPPED', () => {
    expect(decideCron({ kind: 'stop' }, {}, context(null))).to.equal(null);
    expect(decideCron({ kind: 'stop' }, { cron_status: 'STOPPED' }, context(null))).to.equal(null);
    expect(decideCron({ kind: 'stop' }, { cron_status: 'STOP' }, context(1))).to.equal(null);
    expect(decideCron({ kind: 'stop' }, { cron_status: 'ERROR', error: 'boom' }, context(null))?.cron_status).to.equal('STOPPED');
  });

  it('given the loop events, when decided, then STARTED -> RUNNING, STOP -> STOPPED, STARTED|RUNNING -> ERROR only', () => {
    expect(decideCron({ kind: 'loop_began' }, { cron_status: 'STARTED' }, context(0))?.cron_status).to.equal('RUNNING');
    expect(decideCron({ kind: 'loop_began' }, { cron_status: 'RUNNING' }, context(0))).to.equal(null);
    expect(decideCron({ kind: 'loop_ended' }, { cron_status: 'STOP' }, context(0))).to.deep.include({ cron_status: 'STOPPED', stop_date: now.toISOString() });
    expect(decideCron({ kind: 'loop_ended' }, { cron_status: 'STARTED' }, context(0))).to.equal(null);
    expect(decideCron({ kind: 'loop_failed', error: 'db gone' }, { cron_status: 'RUNNING' }, context(0))).to.deep.include({ cron_status: 'ERROR', error: 'db gone' });
    expect(decideCron({ kind: 'loop_failed', error: 'db gone' }, { cron_status: 'STOPPED' }, context(0))).to.equal(null);
  });

  it('given statuses and heartbeats, when asked, then alive means STARTED/RUNNING with a beat younger than 3 intervals', () => {
    expect(isCronAlive({ cron_status: 'RUNNING' }, context(14))).to.equal(true);
    expect(isCronAlive({ cron_status: 'RUNNING' }, context(16))).to.equal(false);
    expect(isCronAlive({ cron_status: 'RUNNING', latest_heartbeat: seconds(1) }, context(null))).to.equal(true);
    expect(isCronAlive({ cron_status: 'STOP' }, context(1))).to.equal(false);
  });
});
