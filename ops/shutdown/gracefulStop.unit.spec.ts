import { expect } from 'chai';
import type { ActiveRun } from '../worker/ProcessCodeRunner.ts';
import { describeRun, gracefulStop, shutdownReason, type GracefulStopParts } from './gracefulStop.ts';

const NOW = new Date('2030-01-01T00:10:00Z');

const run = (overrides: Partial<ActiveRun> = {}): ActiveRun => ({
  kind: 'operator',
  taskLaui: '0123456789abcdef01234567',
  taskName: 'nightly',
  actionLaui: null,
  actionName: null,
  sessionId: 'session-1',
  startedAt: new Date(NOW.getTime() - 125_000),
  ...overrides,
});

/** Work that ends when the test says so. */
const work = () => {
  let end: () => void = () => {};
  const done = new Promise<void>((resolve) => (end = resolve));
  return { done, end };
};

describe('gracefulStop (the bounded stop of SIGINT/SIGTERM)', () => {
  it('given nothing taken, when the service stops, then nothing is reported and no run is stopped', async () => {
    const lines: string[] = [];
    const parts: GracefulStopParts = { pending: [{ name: 'worker', done: Promise.resolve() }], runs: () => [], stopRuns: () => expect.fail('no run to stop') };
    expect(await gracefulStop(parts, { graceSeconds: 30, report: (line) => lines.push(line), now: () => NOW })).to.deep.equal({ stopped: 0, unsettled: [] });
    expect(lines).to.deep.equal([]);
  });

  it('given a run that ends within the grace period, when the service stops, then the wait names the run and its task, and the run is never stopped', async () => {
    const worker = work();
    const lines: string[] = [];
    const parts: GracefulStopParts = {
      pending: [{ name: 'the worker', done: worker.done }],
      runs: () => [run()],
      stopRuns: () => expect.fail('a run that ended is not stopped'),
    };
    const stopping = gracefulStop(parts, {
      graceSeconds: 3600,
      report: (line) => {
        lines.push(line);
        worker.end();
      },
      now: () => NOW,
    });
    expect(await stopping).to.deep.equal({ stopped: 0, unsettled: [] });
    expect(lines).to.deep.equal([
      'Waiting up to 3600 s (SHUTDOWN_GRACE_SECONDS) for 1 run: task "nightly" (0123456789abcdef01234567) (running for 125 s, session session-1); and the worker',
    ]);
  });

  it('given a run that outlives the grace period, when it is over, then the runs are stopped with the reason and the stop waits for their ends to be recorded', async () => {
    const worker = work();
    const lines: string[] = [];
    const reasons: string[] = [];
    const parts: GracefulStopParts = {
      pending: [{ name: 'the worker', done: worker.done }],
      runs: () => (reasons.length === 0 ? [run()] : []),
      stopRuns: (reason) => {
        reasons.push(reason);
        // The killed run ends, and the worker records it.
        setImmediate(worker.end);
        return 1;
      },
    };
    expect(await gracefulStop(parts, { graceSeconds: 0, report: (line) => lines.push(line), now: () => NOW })).to.deep.equal({ stopped: 1, unsettled: [] });
    expect(reasons).to.deep.equal([shutdownReason(0)]);
    expect(shutdownReason(30)).to.equal('the service stopped (SHUTDOWN_GRACE_SECONDS=30) before the run ended');
    expect(lines.at(-1)).to.equal(
      'Grace period over (SHUTDOWN_GRACE_SECONDS=0): stopped 1 run (process groups killed): task "nightly" (0123456789abcdef01234567) (running for 125 s, session session-1). Their tasks end error: the service stopped (SHUTDOWN_GRACE_SECONDS=0) before the run ended',
    );
  });

  it('given a run going on, when a progress interval passes within the grace period, then the wait says again what it waits for and the seconds left', async () => {
    const worker = work();
    const lines: string[] = [];
    const parts: GracefulStopParts = { pending: [{ name: 'the worker', done: worker.done }], runs: () => [run()], stopRuns: () => expect.fail('the run ends within the grace period') };
    const report = (line: string) => {
      lines.push(line);
      if (line.startsWith('Still waiting')) worker.end();
    };
    expect(await gracefulStop(parts, { graceSeconds: 60, progressMs: 10, report, now: () => new Date() })).to.deep.equal({ stopped: 0, unsettled: [] });
    expect(lines).to.have.length(2);
    expect(lines[1]).to.match(/^Still waiting \(60 s left\) for 1 run: task "nightly" \(0123456789abcdef01234567\) \(running for \d+ s, session session-1\); and the worker$/);
  });

  it('given work that does not end even after its runs were stopped, when the settle time is over, then the stop goes on and says what it gave up on', async () => {
    const lines: string[] = [];
    const parts: GracefulStopParts = { pending: [{ name: 'HTTP requests in progress', done: new Promise(() => {}) }], runs: () => [], stopRuns: () => 0 };
    expect(await gracefulStop(parts, { graceSeconds: 0, settleMs: 1, report: (line) => lines.push(line), now: () => NOW })).to.deep.equal({ stopped: 0, unsettled: ['HTTP requests in progress'] });
    expect(lines.at(-1)).to.match(/^Gave up waiting for: HTTP requests in progress\. /);
  });

  it('given action and module runs, when described, then each says what it is for', () => {
    expect(describeRun(run({ kind: 'action', actionLaui: 'a1', actionName: 'notify', sessionId: null }), NOW)).to.equal('action "notify" (a1) of task "nightly" (0123456789abcdef01234567) (running for 125 s)');
    expect(describeRun(run({ kind: 'action', taskLaui: null, actionLaui: 'a1', actionName: 'notify', sessionId: null }), NOW)).to.equal('action "notify" (a1) (running for 125 s)');
    expect(describeRun(run({ kind: 'module', taskLaui: null, sessionId: null }), NOW)).to.equal('an AI module run (running for 125 s)');
  });
});
