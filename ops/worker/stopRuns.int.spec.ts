import { expect } from 'chai';
import type { OperatorOutcome } from '../../shared/ports/CodeRunner.ts';
import { bareOperatorRequest } from './operatorRequests.ts';
import { ProcessCodeRunner } from './ProcessCodeRunner.ts';

/** Says it started, then sleeps five minutes; its finish hook would print too. */
const SLEEPER = `
export async function run() { console.log('started'); await new Promise((resolve) => setTimeout(resolve, 300000)); return { done: true }; }
export function finish() { console.log('finish called'); }
`;
const REASON = 'the service stopped (SHUTDOWN_GRACE_SECONDS=30) before the run ended';

/** The runner side of a bounded shutdown (ops/shutdown): the runs in progress, stopped at once. */
describe('ProcessCodeRunner.activeRuns and stopRuns (the end of a shutdown grace period)', function () {
  this.timeout(60_000);
  let runner: ProcessCodeRunner;

  beforeEach(() => {
    runner = new ProcessCodeRunner({ poolSize: 0 });
  });
  afterEach(async () => {
    await runner.close();
  });

  it('given an operator run in progress, when the runs are stopped, then it is listed with its task until then, ends as an error with the reason (its finish hook not started), and a later run is refused with it', async () => {
    const lines: string[] = [];
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => (started = resolve));
    const outcome: Promise<OperatorOutcome> = runner.runOperator({
      ...bareOperatorRequest({ language: 'javascript', code: SLEEPER }),
      context: { task_laui: 'task-1', task_name: 'nightly', session_id: 'session-1' },
      limits: { timeoutMs: 600_000, memoryMb: 128, maxOutputBytes: 64 * 1024 },
      output: {
        line: (line) => {
          lines.push(line.text);
          if (line.text === 'started') started();
        },
        dropped: () => undefined,
      },
    });
    await running;
    expect(runner.activeRuns()).to.have.length(1);
    expect(runner.activeRuns()[0]).to.include({ kind: 'operator', taskLaui: 'task-1', taskName: 'nightly', sessionId: 'session-1', actionLaui: null });

    expect(runner.stopRuns(REASON)).to.equal(1);
    const ended = await outcome;
    expect(ended).to.include({ status: 'error', message: REASON });
    expect(ended.output).to.deep.equal({ error: REASON });
    expect(lines).to.not.include('finish called');
    expect(runner.activeRuns()).to.deep.equal([]);

    const later = await runner.runAction({ codeblock: { language: 'javascript', code: 'export function run() { return 1; }' }, connection: null, actionVariables: {}, context: {}, limits: { timeoutMs: 10_000, memoryMb: 128, maxOutputBytes: 64 * 1024 } });
    expect(later).to.include({ ok: false, message: REASON });
  });

  it('given no run in progress, when the runs are stopped, then none is counted', () => {
    expect(runner.stopRuns(REASON)).to.equal(0);
  });
});
