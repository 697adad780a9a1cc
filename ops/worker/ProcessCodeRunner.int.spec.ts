import { expect } from 'chai';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ActionRunRequest, Language, OperatorOutcome, OperatorRunRequest } from '../../shared/ports/CodeRunner.ts';
import { bareOperatorRequest, LIMITS, operatorRequest, REUSE } from './operatorRequests.ts';
import { pollsUntilCancelled, succeedsOnThirdPoll } from '../../test/support/operatorSnippets.ts';
import { ProcessCodeRunner } from './ProcessCodeRunner.ts';

const SECRETS: Record<string, string> = {
  JWT_PRIVATE_KEY: 'jwt-private-key-value-4711',
  ENCRYPTION_KEY: 'encryption-key-value-0815',
  SECRET_X: 'secret-x-value-1234',
  // The Kafka bus's credentials (KAFKA_SASL_*): user code could otherwise write execute_task itself.
  KAFKA_SASL_USERNAME: 'kafka-user-value-2718',
  KAFKA_SASL_PASSWORD: 'kafka-password-value-3141',
};
const ALLOWED_ENV = ['HOME', 'LANG', 'PATH', 'TMPDIR', 'LC_CTYPE'];
const INTERRUPT_GRACE_MS = 300;

/** Strings must be in the message, patterns must match it; the status is checked first, so a wrong one is named as such. */
function expectEnded(outcome: OperatorOutcome, status: 'error' | 'timeout' | 'fail', ...message: [string | RegExp, ...Array<string | RegExp>]): void {
  expect(outcome.status).to.equal(status);
  const text = 'message' in outcome ? outcome.message : undefined;
  for (const part of message) {
    if (typeof part === 'string') expect(text).to.include(part);
    else expect(text).to.match(part);
  }
}

interface WhoAmI {
  pid: number;
  cwd: string;
  home: string;
}

/** Operator snippets; each gets the language's `finish` appended, which writes `<dir>/<tag>.finish`. */
const FINISH: Record<Language, string> = {
  python: `
def finish(connection, payload, context):
    import json, os
    with open(os.path.join(context["dir"], context["tag"] + ".finish"), "w") as f:
        f.write(json.dumps({"finished": True}))
`,
  javascript: `
export async function finish(connection, payload, context) {
  const { writeFileSync } = await import('node:fs');
  writeFileSync(context.dir + '/' + context.tag + '.finish', JSON.stringify({ finished: true }));
}
`,
};

type Snippet =
  | 'success'
  | 'failed'
  | 'throws'
  | 'neverReturns'
  | 'alwaysRunning'
  | 'allocates'
  | 'prints'
  | 'hugeResult'
  | 'env'
  | 'policy'
  | 'exits'
  | 'syntaxError'
  | 'noRun'
  | 'cancellable'
  | 'usesInstall'
  | 'actionValue'
  | 'actionNonJson'
  | 'actionSlow'
  | 'whoAmI';

const CODE: Record<Language, Record<Snippet, string>> = {
  python: {
    success: succeedsOnThirdPoll(true).python,
    failed: `
def run(connection, payload, context):
    return None
def check_completion(connection, payload, context):
    return {"status": "failed", "message": "remote job failed"}
`,
    throws: `
def run(connection, payload, context):
    raise ValueError("boom in run")
def check_completion(connection, payload, context):
    return {"status": "success"}
`,
    neverReturns: `
def run(connection, payload, context):
    while True:
        pass
`,
    alwaysRunning: `
def run(connection, payload, context):
    return {}
def check_completion(connection, payload, context):
    return {"status": "running", "progress": 0.5}
`,
    allocates: `
hog = []
def run(connection, payload, context):
    while True:
        hog.append(bytearray(8 * 1024 * 1024))
`,
    prints: `
def run(connection, payload, context):
    for i in range(200000):
        print("x" * 99)
    return {}
`,
    hugeResult: `
def run(connection, payload, context):
    return {}
def check_completion(connection, payload, context):
    return {"status": "success", "blob": "x" * 1000000}
`,
    env: `
import os
def run(connection, payload, context):
    return {"env": dict(os.environ), "cwd": os.getcwd()}
`,
    policy: `
def run(connection, payload, context):
    with open("/proc/self/stat") as stat:
        return {"policy": int(stat.read().rsplit(")", 1)[1].split()[38])}
`,
    exits: `
import sys
def run(connection, payload, context):
    sys.exit(3)
`,
    syntaxError: `
def run(connection, payload, context:
    return {}
`,
    noRun: `
def check_completion(connection, payload, context):
    return {"status": "success"}
`,
    cancellable: pollsUntilCancelled().python,
    usesInstall: `
import json
def run(connection, payload, context):
    with open("installed.json") as f:
        return json.load(f)
`,
    actionValue: `
def run(connection, action_variables, context):
    return {"sum": action_variables["a"] + action_variables["b"], "host": connection["host"], "k": context["k"], "list": [1, None, "x"]}
`,
    actionNonJson: `
def run(connection, action_variables, context):
    return {"tags": {1, 2}}
`,
    actionSlow: `
import time
def run(connection, action_variables, context):
    time.sleep(30)
`,
    whoAmI: `
import os
def run(connection, action_variables, context):
    return {"pid": os.getpid(), "cwd": os.getcwd(), "home": os.environ["HOME"]}
`,
  },
  javascript: {
    success: succeedsOnThirdPoll(true).javascript,
    failed: `
export function run() { return null; }
export function check_completion() { return { status: 'failed', message: 'remote job failed' }; }
`,
    throws: `
export function run() { throw new TypeError('boom in run'); }
export function check_completion() { return { status: 'success' }; }
`,
    neverReturns: `
export function run() { for (;;) {} }
`,
    alwaysRunning: `
export function run() { return {}; }
export async function check_completion() { return { status: 'running', progress: 0.5 }; }
`,
    allocates: `
const hog = [];
export function run() {
  for (;;) hog.push(new Array(100000).fill(Math.random()));
}
`,
    prints: `
export function run() {
  const line = 'x'.repeat(99);
  for (let i = 0; i < 200000; i++) console.log(line);
  return {};
}
`,
    hugeResult: `
export function run() { return {}; }
export function check_completion() { return { status: 'success', blob: 'x'.repeat(1000000) }; }
`,
    env: `
export function run() { return { env: { ...process.env }, cwd: process.cwd() }; }
`,
    policy: `
import { readFileSync } from 'node:fs';
export function run() { return { policy: Number(readFileSync('/proc/self/stat', 'utf8').split(')').at(-1).trim().split(' ')[38]) }; }
`,
    exits: `
export function run() { process.exit(3); }
`,
    syntaxError: `
export function run(connection, payload, context {
  return {};
}
`,
    noRun: `
export function check_completion() { return { status: 'success' }; }
`,
    cancellable: pollsUntilCancelled().javascript,
    usesInstall: `
import { readFileSync } from 'node:fs';
export function run() { return JSON.parse(readFileSync('installed.json', 'utf8')); }
`,
    actionValue: `
module.exports = {
  run(connection, actionVariables, context) {
    return { sum: actionVariables.a + actionVariables.b, host: connection.host, k: context.k, list: [1, null, 'x'] };
  },
};
`,
    actionNonJson: `
export function run() { return { tags: new Set([1, 2]) }; }
`,
    actionSlow: `
export async function run() { await new Promise((resolve) => setTimeout(resolve, 30000)); }
`,
    whoAmI: `
exports.run = () => ({ pid: process.pid, cwd: process.cwd(), home: process.env.HOME });
`,
  },
};

describe('ProcessCodeRunner: operators and actions in sandboxed processes', function () {
  this.timeout(20_000);
  let runner: ProcessCodeRunner;
  let scratch: string;
  const savedEnv: Record<string, string | undefined> = {};
  let seq = 0;

  before(async () => {
    for (const [name, value] of Object.entries(SECRETS)) {
      savedEnv[name] = process.env[name];
      process.env[name] = value;
    }
    scratch = mkdtempSync(join(tmpdir(), 'coderunner-spec-'));
    runner = new ProcessCodeRunner({ poolSize: 2, interruptGraceMs: INTERRUPT_GRACE_MS, finishTimeoutMs: 3000 });
    await Promise.all([runner.warmUp('python', LIMITS.memoryMb), runner.warmUp('javascript', LIMITS.memoryMb)]);
  });

  after(async () => {
    await runner.close();
    for (const [name, value] of Object.entries(savedEnv)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    rmSync(scratch, { recursive: true, force: true });
  });

  /** An operator run whose context points finish at the scratch dir; `finished()` tells whether finish ran. */
  function operator(language: Language, code: string, overrides: (tag: string) => Partial<OperatorRunRequest> = () => ({}), appendFinish = true) {
    const tag = `op${++seq}`;
    const request: OperatorRunRequest = {
      ...operatorRequest({ language, code: appendFinish ? code + FINISH[language] : code }, scratch, tag),
      ...overrides(tag),
    };
    return {
      tag,
      run: async (): Promise<OperatorOutcome & { elapsedMs: number }> => {
        const started = Date.now();
        const outcome = await runner.runOperator(request);
        return { ...outcome, elapsedMs: Date.now() - started };
      },
      finished: () => existsSync(join(scratch, `${tag}.finish`)),
    };
  }

  function action(language: Language, code: string, overrides: Partial<ActionRunRequest> = {}) {
    return runner.runAction({
      codeblock: { language, code },
      connection: { host: 'api.example' },
      actionVariables: { a: 2, b: 3 },
      context: { k: 'v' },
      limits: LIMITS,
      ...overrides,
    });
  }

  for (const language of ['python', 'javascript'] as const) {
    const code = CODE[language];

    describe(`${language} operators`, () => {
      it('given initialize/run and check_completion answering running twice, when run, then it succeeds with the last result and finish is called', async () => {
        let heartbeats = 0;
        const op = operator(language, code.success, () => ({ onHeartbeat: () => (heartbeats += 1) }));
        const outcome = await op.run();
        expect(outcome.status, outcome.logs).to.equal('success');
        expect(outcome.output).to.deep.equal({ status: 'success', polls: 3, result: 42, host: 'db.example' });
        expect(op.finished()).to.equal(true);
        expect(heartbeats).to.be.greaterThan(0);
      });

      it('given check_completion answering status failed, when run, then the run is an error carrying that result and finish is called', async () => {
        const op = operator(language, code.failed);
        const outcome = await op.run();
        expectEnded(outcome, 'error', 'remote job failed');
        expect(outcome.output).to.deep.equal({ status: 'failed', message: 'remote job failed' });
        expect(op.finished()).to.equal(true);
      });

      it('given run throws, when run, then the run is an error with the message in output.error and finish is still called', async () => {
        const op = operator(language, code.throws);
        const outcome = await op.run();
        expectEnded(outcome, 'error', 'boom in run');
        expect(outcome.output.error).to.be.a('string').and.include('boom in run');
        expect(op.finished()).to.equal(true);
      });

      it('given run never returns, when the time limit passes, then the run times out within the limit and finish is still called', async () => {
        const op = operator(language, code.neverReturns, () => ({ limits: { ...LIMITS, timeoutMs: 1000 } }));
        const outcome = await op.run();
        expectEnded(outcome, 'timeout', '1000 ms');
        // Not before the limit (a lower bound: a slower machine only makes it longer); without the limit
        // the loop never ends, and the test's timeout would.
        expect(outcome.elapsedMs).to.be.at.least(1000);
        expect(op.finished()).to.equal(true);
      });

      it('given check_completion always answers running, when the completion timeout passes, then the run times out with the last result', async () => {
        const op = operator(language, code.alwaysRunning, () => ({ checkCompletionTimeoutMs: 400 }));
        const outcome = await op.run();
        expectEnded(outcome, 'timeout', 'check_completion');
        // The completion timeout ended it (the reason says so), not the run's time limit.
        expect(outcome.output).to.deep.equal({ status: 'running', progress: 0.5 });
        expect(op.finished()).to.equal(true);
      });

      it('given code allocating without bound, when run under a 64 MB limit, then it ends as a memory error and the parent is unharmed', async () => {
        const parentRss = process.memoryUsage().rss;
        const op = operator(language, code.allocates, () => ({ limits: { ...LIMITS, memoryMb: 64 } }));
        const outcome = await op.run();
        expectEnded(outcome, 'error', /memory limit of 64 MB exceeded/);
        expect(process.memoryUsage().rss - parentRss).to.be.below(64 * 1024 * 1024);
        const after = await operator(language, code.success).run();
        expect(after.status).to.equal('success');
      });

      it('given code printing megabytes, when run, then the log is capped, the run fails cleanly and finish is called', async () => {
        const op = operator(language, code.prints);
        const outcome = await op.run();
        expectEnded(outcome, 'error', 'output limit exceeded');
        expect(outcome.logsTruncated).to.equal(true);
        expect(Buffer.byteLength(outcome.logs)).to.be.below(LIMITS.maxOutputBytes + 1024);
        expect(outcome.logs).to.match(/^x{99}\n/);
        expect(op.finished()).to.equal(true);
      });

      it('given check_completion returning a result larger than maxOutputBytes, when run, then the run is an error, not an unbounded buffer', async () => {
        const outcome = await operator(language, code.hugeResult).run();
        expectEnded(outcome, 'error', 'protocol message exceeded');
      });

      it('given a run process on Linux, when it reads its scheduling policy, then it is SCHED_BATCH (it does not preempt the service when woken)', async function () {
        if (process.platform !== 'linux') this.skip();
        const outcome = await operator(language, code.policy).run();
        expect(outcome.status).to.equal('success');
        expect(outcome.output).to.deep.equal({ policy: 3 });
      });

      it('given service secrets in the parent environment, when the operator reads its environment, then it finds none of them', async () => {
        const outcome = await operator(language, code.env).run();
        expect(outcome.status).to.equal('success');
        const env = outcome.output.env as Record<string, string>;
        expect(Object.keys(env).filter((name) => !ALLOWED_ENV.includes(name))).to.deep.equal([]);
        expect(env.HOME).to.equal(outcome.output.cwd);
        expect(env.TMPDIR).to.equal(outcome.output.cwd);
        const text = JSON.stringify(outcome.output);
        for (const [name, value] of Object.entries(SECRETS)) {
          expect(text).not.to.include(name);
          expect(text).not.to.include(value);
        }
      });

      it(`given code calling ${language === 'python' ? 'sys.exit' : 'process.exit'}, when run, then the run is an error saying so and finish is called`, async () => {
        const op = operator(language, code.exits);
        const outcome = await op.run();
        expectEnded(outcome, 'error', language === 'python' ? 'sys.exit(3)' : 'process.exit(3)');
        expect(op.finished()).to.equal(true);
      });

      it('given a syntax error, when run, then the run is fail and finish is not called', async () => {
        const op = operator(language, code.syntaxError);
        const outcome = await op.run();
        expectEnded(outcome, 'fail', /invalid code: .*SyntaxError/);
        expect(op.finished()).to.equal(false);
      });

      it('given code without a run function, when run, then the run is fail', async () => {
        const outcome = await operator(language, code.noRun).run();
        expectEnded(outcome, 'fail', 'no run function');
      });

      it('given isCancelled turns true after the first poll, when run, then the run is cancelled after finish was called', async () => {
        // The marker is written inside check_completion, before its answer crosses the pipe: a
        // cancel seen at that very tick would end the run mid-poll, with no output yet (a busy
        // machine did so). Cancelling one tick after the marker is first seen lets the poll answer.
        let seen = 0;
        const op = operator(language, code.cancellable, (tag) => ({
          pollIntervalMs: 100,
          isCancelled: async () => existsSync(join(scratch, `${tag}.polled`)) && ++seen > 1,
        }));
        const outcome = await op.run();
        expect(outcome.status).to.equal('cancelled');
        expect(outcome.output.status).to.equal('running');
        expect(outcome.output.polls).to.be.within(1, 3);
        expect(op.finished()).to.equal(true);
      });

      it('given a failing bashblock, when run, then the run is an error with the stderr tail and the code is never loaded', async () => {
        const op = operator(language, code.success, () => ({ bashblock: { code: 'echo installing; echo "ERROR: no such package foo" >&2; exit 7' } }));
        const outcome = await op.run();
        expectEnded(outcome, 'error', 'exit code 7', 'no such package foo');
        expect(outcome.logs).to.include('installing');
        expect(op.finished()).to.equal(false);
      });

      it('given a bashblock writing into the working directory, when run, then the code sees its files and the same scrubbed env', async () => {
        const op = operator(language, code.usesInstall, () => ({ bashblock: { code: 'printf \'{"from":"bash","secrets":"%s%s"}\' "$JWT_PRIVATE_KEY" "$SECRET_X" > installed.json' } }));
        const outcome = await op.run();
        expect(outcome.status, outcome.logs).to.equal('success');
        expect(outcome.output).to.deep.equal({ from: 'bash', secrets: '' });
      });
    });

    describe(`${language} actions`, () => {
      it('given an action returning a value, when run, then the result is that value', async () => {
        const outcome = await action(language, code.actionValue);
        expect(outcome).to.include({ ok: true });
        expect(outcome.ok && outcome.result).to.deep.equal({ sum: 5, host: 'api.example', k: 'v', list: [1, null, 'x'] });
      });

      it('given an action returning a set, when run, then it is an error saying the value is not JSON-serialisable', async () => {
        const outcome = await action(language, code.actionNonJson);
        expect(outcome.ok).to.equal(false);
        expect(!outcome.ok && outcome.kind).to.equal('error');
        expect(!outcome.ok && outcome.message).to.match(/not JSON-serialisable$/);
      });

      it('given an action that outlives its time limit, when run, then it is a timeout within the limit', async () => {
        const started = Date.now();
        const outcome = await action(language, code.actionSlow, { limits: { ...LIMITS, timeoutMs: 800 } });
        // A timeout, not the 30 s sleep's end; and not before the limit (a lower bound only).
        expect(!outcome.ok && outcome.kind).to.equal('timeout');
        expect(Date.now() - started).to.be.at.least(800);
      });

      it('given a fresh-process run, when it ends, then its working directory is gone and the next run has another process', async () => {
        const first = await action(language, code.whoAmI);
        const second = await action(language, code.whoAmI);
        if (!first.ok || !second.ok) throw new Error(`action failed: ${JSON.stringify([first, second])}`);
        const [a, b] = [first.result, second.result] as [WhoAmI, WhoAmI];
        expect(a.home).to.equal(a.cwd);
        // Outcomes come back before the cleanup; the directory goes right after.
        await runner.cleanedUp();
        expect(existsSync(a.cwd)).to.equal(false);
        expect(b.pid).not.to.equal(a.pid);
      });

      it('given reuse, when two runs follow each other, then one process serves both, each in its own fresh directory', async () => {
        const first = await action(language, code.whoAmI, { ...REUSE });
        const second = await action(language, code.whoAmI, { ...REUSE });
        if (!first.ok || !second.ok) throw new Error(`action failed: ${JSON.stringify([first, second])}`);
        const [a, b] = [first.result, second.result] as [WhoAmI, WhoAmI];
        expect(b.pid).to.equal(a.pid);
        expect(b.cwd).not.to.equal(a.cwd);
        expect(b.home).to.equal(b.cwd);
        await runner.cleanedUp();
        // The first run had the process's own directory. After each reuse run the process empties
        // it and moves into a new, empty run directory inside it: the second run's is gone too.
        expect(existsSync(b.cwd)).to.equal(false);
        const left = readdirSync(a.cwd);
        expect(left).to.have.length(1);
        expect(readdirSync(join(a.cwd, left[0] ?? ''))).to.deep.equal([]);
      });
    });
  }

  describe('language-specific edges', () => {
    it('given python calling os._exit, when run, then the run is an error naming the ended process and finish runs in a fresh process', async () => {
      const op = operator('python', 'import os\ndef run(connection, payload, context):\n    os._exit(3)\n');
      const outcome = await op.run();
      expectEnded(outcome, 'error', 'ended unexpectedly (exit code 3)');
      expect(op.finished()).to.equal(true);
    });

    it('given python cancelled while run sleeps, when cancellation is seen, then run is interrupted and finish sees the state run left', async () => {
      const code = [
        'import json, os, time',
        'job = {}',
        'def run(connection, payload, context):',
        '    job["id"] = "job-42"',
        '    open(os.path.join(context["dir"], context["tag"] + ".started"), "w").close()',
        // An hour: not interrupted, the run would outlast the test's timeout.
        '    time.sleep(3600)',
        'def finish(connection, payload, context):',
        '    with open(os.path.join(context["dir"], context["tag"] + ".finish"), "w") as f:',
        '        f.write(json.dumps({"job": job.get("id")}))',
      ].join('\n');
      const op = operator('python', code, (tag) => ({ isCancelled: async () => existsSync(join(scratch, `${tag}.started`)) }), false);
      const outcome = await op.run();
      expect(outcome.status).to.equal('cancelled');
      expect(JSON.parse(readFileSync(join(scratch, `${op.tag}.finish`), 'utf8'))).to.deep.equal({ job: 'job-42' });
    });

    it('given a javascript run awaiting forever, when the time limit passes, then finish runs in the same process', async () => {
      const op = operator('javascript', 'export async function run() { await new Promise(() => {}); }\n', () => ({ limits: { ...LIMITS, timeoutMs: 600 } }));
      const outcome = await op.run();
      expect(outcome.status).to.equal('timeout');
      expect(outcome.logs).not.to.include('fresh process');
      expect(op.finished()).to.equal(true);
    });

    it('given a javascript CommonJS operator without check_completion, when run, then run’s object is the output', async () => {
      const code = [
        "const fs = require('node:fs');",
        'module.exports.run = async (connection, payload) => ({ doubled: payload.value * 2 });',
        "module.exports.finish = (connection, payload, context) => fs.writeFileSync(context.dir + '/' + context.tag + '.finish', '{}');",
      ].join('\n');
      const op = operator('javascript', code, () => ({}), false);
      const outcome = await op.run();
      expect(outcome.status, outcome.logs).to.equal('success');
      expect(outcome.output).to.deep.equal({ doubled: 42 });
      expect(op.finished()).to.equal(true);
    });

    it('given javascript Buffers beyond the memory budget (outside the V8 heap), when run, then the watchdog ends it as a memory error', async () => {
      const code = 'const hog = [];\nexport function run() { for (;;) hog.push(Buffer.alloc(4 * 1024 * 1024, 1)); }\n';
      const outcome = await operator('javascript', code, () => ({ limits: { ...LIMITS, memoryMb: 64 } })).run();
      expectEnded(outcome, 'error', /memory limit of 64 MB exceeded/);
    });
  });

  describe('identity', () => {
    it('given runAs an unprivileged user, when code reads the service process environ, then it is denied (same-uid code can read it)', async function () {
      if (process.getuid?.() !== 0) this.skip();
      const code = [
        "import { readFileSync } from 'node:fs';",
        'export function run() {',
        // The environ file holds the service's start-up environment (where real secrets live).
        "  try { return { environReadable: readFileSync('/proc/' + process.ppid + '/environ', 'utf8').includes('PATH=') }; }",
        '  catch (error) { return { denied: error.code }; }',
        '}',
      ].join('\n');
      const sameUid = await operator('javascript', code, () => ({}), false).run();
      expect(sameUid.output).to.deep.equal({ environReadable: true });
      const confined = new ProcessCodeRunner({ poolSize: 0, runAs: { uid: 65534, gid: 65534 }, sandbox: false });
      try {
        const outcome = await confined.runOperator({
          ...bareOperatorRequest({ language: 'javascript', code }),
          bashblock: { code: 'test "$(id -u)" = 65534' },
        });
        expect(outcome.status, outcome.logs).to.equal('success');
        expect(outcome.output).to.deep.equal({ denied: 'EACCES' });
      } finally {
        await confined.close();
      }
    });
  });

  describe('codeblock validation', () => {
    const cases: Array<[string, unknown, string]> = [
      ['no codeblock', null, 'missing codeblock'],
      ['a codeblock without language', { code: 'def run(c, p, x): pass' }, 'codeblock has no language'],
      ['an unsupported language', { language: 'ruby', code: 'def run; end' }, 'unsupported language: ruby (supported: python, javascript)'],
      ['a codeblock without code', { language: 'python', code: '' }, 'codeblock has no code'],
    ];
    for (const [given, codeblock, message] of cases) {
      it(`given ${given}, when an operator runs, then it is fail; as an action it is invalid`, async () => {
        const outcome = await runner.runOperator(bareOperatorRequest(codeblock as OperatorRunRequest['codeblock']));
        expect(outcome).to.deep.include({ status: 'fail', message });
        const actionOutcome = await runner.runAction({
          codeblock: codeblock as ActionRunRequest['codeblock'],
          connection: {},
          actionVariables: {},
          context: {},
          limits: LIMITS,
        });
        expect(actionOutcome).to.deep.include({ ok: false, kind: 'invalid', message });
      });
    }
  });

  describe('reuse process lifetime', () => {
    const GROWS: Record<Language, string> = {
      python: 'import os\nkept = []\ndef run(connection, payload, context):\n    kept.append(bytearray(48 * 1024 * 1024))\n    return {"pid": os.getpid()}\n',
      javascript: 'const kept = [];\nexports.run = () => { kept.push(Buffer.alloc(48 * 1024 * 1024, 1)); return { pid: process.pid }; };\n',
    };
    const PID: Record<Language, string> = {
      python: 'import os\ndef run(connection, payload, context):\n    return {"pid": os.getpid()}\n',
      javascript: 'exports.run = () => ({ pid: process.pid });\n',
    };
    let own: ProcessCodeRunner;
    before(() => {
      own = new ProcessCodeRunner({ poolSize: 0, maxRunsPerProcess: 3 });
    });
    after(() => own.close());
    const pids = async (language: Language, code: string, runs: number, memoryMb = LIMITS.memoryMb) => {
      const seen: number[] = [];
      for (let i = 0; i < runs; i++) {
        const outcome = await own.runAction({ codeblock: { language, code }, connection: {}, actionVariables: {}, context: {}, limits: { ...LIMITS, memoryMb }, ...REUSE });
        if (!outcome.ok) throw new Error(JSON.stringify(outcome));
        seen.push((outcome.result as { pid: number }).pid);
        await own.cleanedUp();
      }
      return seen;
    };

    for (const language of ['python', 'javascript'] as const) {
      it(`given ${language} reuse runs and maxRunsPerProcess 3, when seven run one after the other, then each process serves three`, async () => {
        const seen = await pids(language, PID[language], 7);
        expect(seen.slice(0, 3).every((pid) => pid === seen[0]), String(seen)).to.equal(true);
        expect(seen.slice(3, 6).every((pid) => pid === seen[3]), String(seen)).to.equal(true);
        expect(new Set([seen[0], seen[3], seen[6]]).size, String(seen)).to.equal(3);
      });

      it(`given ${language} reuse runs whose warm module keeps 48 MB each, when the process grew past half its 64 MB limit, then the next run gets another process`, async () => {
        const seen = await pids(language, GROWS[language], 2, 64);
        expect(seen[1]).not.to.equal(seen[0]);
      });
    }
  });

  describe('warm pool', () => {
    it('given concurrent runs of both languages, when they run, then each succeeds and the pool refills to its size', async () => {
      const outcomes = await Promise.all([0, 1, 2, 3].map((i) => action(i % 2 === 0 ? 'python' : 'javascript', CODE[i % 2 === 0 ? 'python' : 'javascript'].actionValue)));
      expect(outcomes.map((o) => o.ok)).to.deep.equal([true, true, true, true]);
      await runner.warmUp('python', LIMITS.memoryMb);
      await runner.warmUp('javascript', LIMITS.memoryMb);
      expect(runner.poolSize().fresh).to.be.at.least(4);
    });

    it('given a closed runner, when closed, then its pooled processes are dead and later runs are refused', async () => {
      const own = new ProcessCodeRunner({ poolSize: 2 });
      await own.warmUp('python', 96);
      await own.warmUp('javascript', 96);
      const pids = own.processIds();
      expect(pids).to.have.length(4);
      await own.close();
      const alive = pids.filter((pid) => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      });
      expect(alive).to.deep.equal([]);
      const refused = await own.runAction({ codeblock: { language: 'python', code: CODE.python.actionValue }, connection: {}, actionVariables: {}, context: {}, limits: LIMITS });
      expect(refused).to.deep.include({ ok: false, kind: 'error', message: 'the code runner is closed' });
    });
  });
});
