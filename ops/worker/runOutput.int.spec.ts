import { expect } from 'chai';
import type { ActionRunRequest, Language, OperatorRunRequest, RunOutputDropped, RunOutputLine } from '../../shared/ports/CodeRunner.ts';
import { bareOperatorRequest, LIMITS, REUSE } from './operatorRequests.ts';
import { ProcessCodeRunner, type ProcessCodeRunnerOptions } from './ProcessCodeRunner.ts';

/** Prints one stdout and one stderr line in every step; check_completion twice (running, then success). */
const EVERY_STEP: Record<Language, string> = {
  python: `
import sys
print("out load")
print("err load", file=sys.stderr)
polls = 0
def initialize(c, p, x):
    print("out initialize")
    print("err initialize", file=sys.stderr)
def run(c, p, x):
    print("out run")
    print("err run", file=sys.stderr)
def check_completion(c, p, x):
    global polls
    polls += 1
    print("out check_completion %d" % polls)
    print("err check_completion %d" % polls, file=sys.stderr)
    return {"status": "running" if polls < 2 else "success"}
def finish(c, p, x):
    print("out finish")
    print("err finish", file=sys.stderr)
`,
  javascript: `
console.log('out load');
console.error('err load');
let polls = 0;
export function initialize() { console.log('out initialize'); console.error('err initialize'); }
export function run() { console.log('out run'); console.error('err run'); }
export function check_completion() {
  polls += 1;
  console.log('out check_completion ' + polls);
  console.error('err check_completion ' + polls);
  return { status: polls < 2 ? 'running' : 'success' };
}
export function finish() { console.log('out finish'); console.error('err finish'); }
`,
};

const EXPECTED_STEPS = [
  ['load', 'load'],
  ['initialize', 'initialize'],
  ['run', 'run'],
  ['check_completion', 'check_completion 1'],
  ['check_completion', 'check_completion 2'],
  ['finish', 'finish'],
];

/**
 * A line now, then a line without its newline, then a wait longer than the run's time limit: both must
 * show while the run waits (the test cancels it once they are in; otherwise the limit ends it as a timeout).
 */
const PRINTS_THEN_WAITS: Record<Language, string> = {
  python: `
import sys, time
def run(c, p, x):
    print("started")
    sys.stdout.write("working... 50%")
    sys.stdout.flush()
    time.sleep(3600)
    return None
`,
  javascript: `
export async function run() {
  console.log('started');
  process.stdout.write('working... 50%');
  await new Promise((resolve) => setTimeout(resolve, 3_600_000));
  return null;
}
`,
};

/** A child process writes to the inherited stdout and stderr: no mark precedes it, the streams still tell. */
const CHILD_PROCESS: Record<Language, string> = {
  python: `
import subprocess
def run(c, p, x):
    subprocess.run(["sh", "-c", "echo child-out; echo child-err >&2"], check=True)
`,
  javascript: `
const { execFileSync } = require('node:child_process');
exports.run = () => { execFileSync('sh', ['-c', 'echo child-out; echo child-err >&2'], { stdio: 'inherit' }); return null; };
`,
};

const FLOOD: Record<Language, string> = {
  python: `
def run(c, p, x):
    for i in range(100000):
        print(i)
`,
  javascript: `
export function run() { for (let i = 0; i < 100000; i += 1) console.log(i); return null; }
`,
};

/** The lines a run hands to its sink, with when each came. */
function collector() {
  const lines: Array<RunOutputLine & { at: number }> = [];
  const dropped: RunOutputDropped[] = [];
  return {
    lines,
    dropped,
    sink: { line: (line: RunOutputLine) => lines.push({ ...line, at: Date.now() }), dropped: (summary: RunOutputDropped) => dropped.push(summary) },
    /** [step, text] of the lines of one stream. */
    of: (stream: RunOutputLine['stream']) => lines.filter((line) => line.stream === stream).map((line) => [line.step, line.text]),
  };
}

function operator(language: Language, code: string, sink: OperatorRunRequest['output'], extra: Partial<OperatorRunRequest> = {}): OperatorRunRequest {
  return { ...bareOperatorRequest({ language, code }), pollIntervalMs: 20, ...(sink ? { output: sink } : {}), ...extra };
}

describe('ProcessCodeRunner: a run\'s output line by line (RunOutput)', function () {
  this.timeout(60_000);
  const runners: ProcessCodeRunner[] = [];
  const runner = (options: ProcessCodeRunnerOptions = {}) => {
    const made = new ProcessCodeRunner({ poolSize: 1, ...options });
    runners.push(made);
    return made;
  };
  after(async () => {
    await Promise.all(runners.map((made) => made.close()));
  });

  const setups: Array<[string, ProcessCodeRunnerOptions]> = [
    ['forked processes, one exec per run', {}],
    ['forked processes, one request per step', { protocol: 'steps' }],
    ['spawned processes (no fork server)', { pythonForkServer: false, nodeForkServer: false, poolSize: 0 }],
  ];
  for (const [setup, options] of setups) {
    describe(setup, () => {
      let own: ProcessCodeRunner;
      before(() => {
        own = runner(options);
      });
      for (const language of ['python', 'javascript'] as const) {
        it(`given ${language} code printing to stdout and stderr in every step, when run, then each line comes on its stream under the step that wrote it`, async () => {
          const { sink, of } = collector();
          const outcome = await own.runOperator(operator(language, EVERY_STEP[language], sink));
          expect(outcome.status, outcome.logs).to.equal('success');
          expect(of('stdout')).to.deep.equal(EXPECTED_STEPS.map(([step, text]) => [step, `out ${text}`]));
          expect(of('stderr')).to.deep.equal(EXPECTED_STEPS.map(([step, text]) => [step, `err ${text}`]));
          // The outcome's own copy of the output has no marks in it.
          expect(outcome.logs).to.include('out run').and.not.include('\x1e');
        });

        it(`given ${language} code whose child process writes to stdout and stderr, when run, then the child's lines keep their streams`, async () => {
          const { sink, of } = collector();
          const outcome = await own.runOperator(operator(language, CHILD_PROCESS[language], sink));
          expect(outcome.status, outcome.logs).to.equal('success');
          expect(of('stdout').map(([, text]) => text)).to.deep.equal(['child-out']);
          expect(of('stderr').map(([, text]) => text)).to.deep.equal(['child-err']);
        });
      }
    });
  }

  for (const language of ['python', 'javascript'] as const) {
    describe(`${language}`, () => {
      it('given a run that prints, then waits, when it runs, then its line and its unfinished line reach the sink while it still runs', async () => {
        const { sink, lines } = collector();
        // Cancelled once both lines are in, by order rather than by a clock: lines that came only at the
        // run's end would leave it to its time limit, a timeout.
        const outcome = await runner({ outputLines: { partialFlushMs: 200 } }).runOperator(
          operator(language, PRINTS_THEN_WAITS[language], sink, { isCancelled: async () => lines.length >= 2 }),
        );
        expect(outcome.status, outcome.logs).to.equal('cancelled');
        expect(lines.map((line) => [line.text, line.partial ?? false])).to.deep.equal([
          ['started', false],
          ['working... 50%', true],
        ]);
      });

      it('given no sink, when the code prints, then the runtime writes no marks and the outcome has the output as before', async () => {
        const outcome = await runner().runOperator(operator(language, EVERY_STEP[language], undefined));
        expect(outcome.status, outcome.logs).to.equal('success');
        expect(outcome.logs).to.include('out load').and.include('err finish').and.not.include('\x1e');
      });

      it('given an action that prints, when run, then its lines are under load and run', async () => {
        const { sink, of } = collector();
        const code = language === 'python' ? 'print("imported")\ndef run(c, v, x):\n    print("acting")\n    return 1\n' : 'console.log("imported");\nexport function run() { console.log("acting"); return 1; }\n';
        const request: ActionRunRequest = { codeblock: { language, code }, connection: {}, actionVariables: {}, context: {}, limits: LIMITS, output: sink };
        const outcome = await runner().runAction(request);
        expect(outcome.ok, outcome.logs).to.equal(true);
        expect(of('stdout')).to.deep.equal([
          ['load', 'imported'],
          ['run', 'acting'],
        ]);
      });

      it('given a reuse process serving two runs that print, when run, then each run has its own lines, from load again', async () => {
        const reusing = runner({ maxIdleReusable: 1 });
        const code = language === 'python' ? 'def run(c, p, x):\n    print("run line")\n' : 'export function run() { console.log("run line"); return null; }\n';
        const first = collector();
        const second = collector();
        const a = await reusing.runOperator(operator(language, code, first.sink, { ...REUSE }));
        const b = await reusing.runOperator(operator(language, code, second.sink, { ...REUSE }));
        expect([a.status, b.status]).to.deep.equal(['success', 'success']);
        expect(first.of('stdout')).to.deep.equal([['run', 'run line']]);
        expect(second.of('stdout')).to.deep.equal([['run', 'run line']]);
      });

      it('given an install step that writes to stdout and stderr, when run, then its lines are under the step install', async () => {
        const { sink, of } = collector();
        const code = language === 'python' ? 'def run(c, p, x):\n    return None\n' : 'export function run() { return null; }\n';
        const outcome = await runner().runOperator(operator(language, code, sink, { bashblock: { code: 'echo installing; echo warned >&2' } }));
        expect(outcome.status, outcome.logs).to.equal('success');
        expect(of('stdout')).to.deep.equal([['install', 'installing']]);
        expect(of('stderr')).to.deep.equal([['install', 'warned']]);
      });

      // How long the event loop is held meanwhile is a speed figure: `BENCH_ONLY=event-loop npm run bench`.
      it('given 100,000 lines printed, when run, then the first 10,000 reach the sink and one report counts the other 90,000', async () => {
        const { sink, lines, dropped } = collector();
        const outcome = await runner().runOperator(operator(language, FLOOD[language], sink, { limits: { ...LIMITS, timeoutMs: 30_000, maxOutputBytes: 8 * 1024 * 1024 } }));
        expect(outcome.status, outcome.logs.slice(-500)).to.equal('success');
        expect(lines).to.have.length(10_000);
        expect(lines.at(-1)?.text).to.equal('9999');
        const droppedBytes = Array.from({ length: 90_000 }, (_, n) => String(n + 10_000).length + 1).reduce((sum, size) => sum + size, 0);
        expect(dropped).to.deep.equal([{ lines: 90_000, bytes: droppedBytes, maxLines: 10_000, maxBytes: 1024 * 1024 }]);
      });
    });
  }
});
