import { expect } from 'chai';
import { marksOf, runBanner, type RunRequest, type TaskSnapshot } from './app/src/task/runBanner.ts';

/** A task that ran once (success) before the user pressed Run now again. */
const before: TaskSnapshot = { state: 'success', session_id: 's1', iteration: 1, last_run_date: '2026-01-01T00:00:00Z' };
const request = (overrides: Partial<RunRequest> = {}): RunRequest => ({ kind: 'run', before: marksOf(before), seenActive: false, ...overrides });

describe('console run banner (runBanner)', () => {
  it('given a run just requested, when the task still shows its previous run, then the banner says requested, not finished', () => {
    expect(runBanner(request(), before)).to.deep.equal({ kind: 'success', text: 'Run requested' });
  });

  it('given a requested run, when the task is queued then running, then the banner follows each state', () => {
    expect(runBanner(request(), { ...before, state: 'queued_for_connection' }).text).to.equal('Run queued: waiting for a free slot on its connection');
    expect(runBanner(request(), { ...before, state: 'queued_in_redis' }).text).to.equal('Run queued: waiting for a worker');
    expect(runBanner(request({ seenActive: true }), { ...before, state: 'running', session_id: 's2' }).text).to.equal('Run running');
  });

  it('given a run seen running, when it ends success, then the banner says it finished', () => {
    expect(runBanner(request({ seenActive: true }), { ...before, session_id: 's2', iteration: 2 })).to.deep.equal({ kind: 'success', text: 'Run finished: success' });
  });

  it('given a run too quick to be seen running, when the task shows a new run ended, then the banner says it finished', () => {
    expect(runBanner(request(), { ...before, state: 'error', session_id: 's2', last_run_output: { error: 'boom' } })).to.deep.equal({ kind: 'error', text: 'Run finished: error (boom)' });
  });

  it('given a cancellation, when the run is still running and then cancelled, then the banner follows', () => {
    const cancel = request({ kind: 'cancel', seenActive: true });
    expect(runBanner(cancel, { ...before, state: 'running' }).text).to.match(/^Cancellation requested/);
    expect(runBanner(cancel, { ...before, state: 'cancelled' })).to.deep.equal({ kind: 'info', text: 'Run finished: cancelled' });
  });
});
