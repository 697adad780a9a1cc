import { expect } from 'chai';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Language, OperatorOutcome, OperatorRunRequest } from '../../shared/ports/CodeRunner.ts';
import { bareOperatorRequest, LIMITS, operatorRequest, REUSE } from './operatorRequests.ts';
import { pollsUntilCancelled, succeedsOnThirdPoll } from '../../test/support/operatorSnippets.ts';
import { ProcessCodeRunner } from './ProcessCodeRunner.ts';
import { RuntimeProcess, runtimeArgs, type ExecEvent, type ExecEvents } from './RuntimeProcess.ts';
import { SpawnedProcess } from './processHandle.ts';
import { makeRunDir, removeRunDir, resolvePython } from './sandbox.ts';

const GRACE_MS = 300;

/** finish writes `<context.dir>/<context.tag>.finish`, so a test can tell whether it ran. */
const FINISH: Record<Language, string> = {
  python: `
def finish(connection, payload, context):
    import os
    open(os.path.join(context["dir"], context["tag"] + ".finish"), "w").close()
`,
  javascript: `
export async function finish(connection, payload, context) {
  const { writeFileSync } = await import('node:fs');
  writeFileSync(context.dir + '/' + context.tag + '.finish', '');
}
`,
};

interface Case {
  given: string;
  code: Record<Language, string>;
  /** Status both protocols must reach. */
  status: OperatorOutcome['status'];
  /** Whether finish must have been called. */
  finished: boolean;
  request?: (tag: string, dir: string) => Partial<OperatorRunRequest>;
  withFinish?: boolean;
}

const CASES: Case[] = [
  {
    given: 'initialize, run, then check_completion answering running twice then success',
    code: succeedsOnThirdPoll(false),
    status: 'success',
    finished: true,
  },
  {
    given: 'check_completion answering failed',
    code: {
      python: 'def run(c, p, x):\n    return None\ndef check_completion(c, p, x):\n    return {"status": "failed", "message": "remote job failed"}\n',
      javascript: 'export function run() { return null; }\nexport function check_completion() { return { status: "failed", message: "remote job failed" }; }\n',
    },
    status: 'error',
    finished: true,
  },
  {
    given: 'check_completion answering a value without status',
    code: {
      python: 'def run(c, p, x):\n    return None\ndef check_completion(c, p, x):\n    return [1, 2]\n',
      javascript: 'export function run() { return null; }\nexport function check_completion() { return [1, 2]; }\n',
    },
    status: 'error',
    finished: true,
  },
  {
    given: 'run raising',
    code: {
      python: 'def run(c, p, x):\n    raise ValueError("boom in run")\ndef check_completion(c, p, x):\n    return {"status": "success"}\n',
      javascript: 'export function run() { throw new TypeError("boom in run"); }\nexport function check_completion() { return { status: "success" }; }\n',
    },
    status: 'error',
    finished: true,
  },
  {
    given: 'initialize raising',
    code: {
      python: 'def initialize(c, p, x):\n    raise ValueError("boom in initialize")\ndef run(c, p, x):\n    return {}\n',
      javascript: 'export function initialize() { throw new Error("boom in initialize"); }\nexport function run() { return {}; }\n',
    },
    status: 'error',
    finished: true,
  },
  {
    given: 'run returning a value that is not JSON',
    code: {
      python: 'def run(c, p, x):\n    return {"tags": {1, 2}}\n',
      javascript: 'export function run() { return { tags: new Set([1, 2]) }; }\n',
    },
    status: 'error',
    finished: true,
  },
  {
    given: 'a syntax error',
    code: {
      python: 'def run(c, p, x:\n    return {}\n',
      javascript: 'export function run(c, p, x {\n  return {};\n}\n',
    },
    status: 'fail',
    finished: false,
  },
  {
    given: 'no run function',
    code: {
      python: 'def check_completion(c, p, x):\n    return {"status": "success"}\n',
      javascript: 'export function check_completion() { return { status: "success" }; }\n',
    },
    status: 'fail',
    finished: false,
  },
  {
    given: 'module code raising at import',
    code: {
      python: 'raise RuntimeError("broken import")\ndef run(c, p, x):\n    return {}\n',
      javascript: 'throw new Error("broken import");\nexport function run() { return {}; }\n',
    },
    status: 'error',
    finished: false,
  },
  {
    given: 'run that never returns (time limit)',
    code: {
      python: 'def run(c, p, x):\n    while True:\n        pass\n',
      javascript: 'export function run() { for (;;) {} }\n',
    },
    status: 'timeout',
    finished: true,
    request: () => ({ limits: { ...LIMITS, timeoutMs: 800 } }),
  },
  {
    given: 'an async run that never settles (time limit)',
    code: {
      python: 'import time\ndef run(c, p, x):\n    time.sleep(60)\n',
      javascript: 'export async function run() { await new Promise(() => {}); }\n',
    },
    status: 'timeout',
    finished: true,
    request: () => ({ limits: { ...LIMITS, timeoutMs: 600 } }),
  },
  {
    given: 'check_completion always running (completion timeout)',
    code: {
      python: 'def run(c, p, x):\n    return {}\ndef check_completion(c, p, x):\n    return {"status": "running", "progress": 0.5}\n',
      javascript: 'export function run() { return {}; }\nexport async function check_completion() { return { status: "running", progress: 0.5 }; }\n',
    },
    status: 'timeout',
    finished: true,
    request: () => ({ checkCompletionTimeoutMs: 300 }),
  },
  {
    given: 'check_completion running while the time limit passes between polls',
    code: {
      python: 'def run(c, p, x):\n    return {}\ndef check_completion(c, p, x):\n    return {"status": "running"}\n',
      javascript: 'export function run() { return {}; }\nexport function check_completion() { return { status: "running" }; }\n',
    },
    status: 'timeout',
    finished: true,
    // The limit must pass between polls, never during the first one: 3 s leaves the first poll
    // time to finish on a loaded machine (at 500 ms it sometimes had not, and the message differed).
    request: () => ({ pollIntervalMs: 10_000, limits: { ...LIMITS, timeoutMs: 3000 } }),
  },
  {
    given: 'cancellation during check_completion polling',
    code: pollsUntilCancelled(),
    status: 'cancelled',
    finished: true,
    request: (tag, dir) => ({ pollIntervalMs: 100, isCancelled: async () => existsSync(join(dir, `${tag}.polled`)) }),
  },
  {
    given: 'run calling sys.exit / process.exit',
    code: {
      python: 'import sys\ndef run(c, p, x):\n    sys.exit(3)\n',
      javascript: 'export function run() { process.exit(3); }\n',
    },
    status: 'error',
    finished: true,
  },
  {
    given: 'run ending its process for real (finish in a fresh process)',
    code: {
      python: 'import os\ndef run(c, p, x):\n    os._exit(3)\n',
      javascript: "export function run() { process.kill(process.pid, 'SIGKILL'); for (;;) {} }\n",
    },
    status: 'error',
    finished: true,
  },
  {
    given: 'a bashblock writing a file the code reads (install step, then the rest of the run)',
    code: {
      python: 'import json\ndef run(c, p, x):\n    with open("installed.json") as f:\n        return json.load(f)\n',
      javascript: "import { readFileSync } from 'node:fs';\nexport function run() { return JSON.parse(readFileSync('installed.json', 'utf8')); }\n",
    },
    status: 'success',
    finished: true,
    request: () => ({ bashblock: { code: 'printf \'{"from":"bash"}\' > installed.json && test -s user_code.*' } }),
  },
];

/** What must be equal between the two protocols: traceback text aside (it names files). */
function comparable(outcome: OperatorOutcome, finished: boolean): Record<string, unknown> {
  // A cancelled run's output is what its last poll answered when the cancellation was seen: a
  // poll more or less is the machine's timing (a loaded one), not the protocol's.
  const output = outcome.status === 'cancelled' ? {} : { ...outcome.output };
  if ('traceback' in output) output.traceback = typeof output.traceback === 'string' && output.traceback.length > 0;
  const notes = outcome.logs.split('\n').filter((line) => line.startsWith('[runner]'));
  return { status: outcome.status, output, message: 'message' in outcome ? outcome.message : undefined, notes, finished };
}

describe('exec protocol: one request per run gives the same outcomes as one request per step', function () {
  this.timeout(30_000);
  let scratch: string;
  let exec: ProcessCodeRunner;
  let steps: ProcessCodeRunner;
  let seq = 0;

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'exec-protocol-spec-'));
    exec = new ProcessCodeRunner({ poolSize: 1, interruptGraceMs: GRACE_MS, finishTimeoutMs: 10_000 });
    steps = new ProcessCodeRunner({ poolSize: 1, interruptGraceMs: GRACE_MS, finishTimeoutMs: 10_000, protocol: 'steps' });
    await Promise.all([exec, steps].flatMap((runner) => [runner.warmUp('python', LIMITS.memoryMb), runner.warmUp('javascript', LIMITS.memoryMb)]));
  });

  after(async () => {
    await Promise.all([exec.close(), steps.close()]);
    rmSync(scratch, { recursive: true, force: true });
  });

  async function operate(runner: ProcessCodeRunner, language: Language, code: string, overrides: (tag: string, dir: string) => Partial<OperatorRunRequest> = () => ({})) {
    const tag = `run${++seq}`;
    // A run's time limit counts from its request, the runtime's start included: each run starts
    // on a ready warm process, so a loaded machine's slow start (the pool refilling after the run
    // before) cannot spend the limit the cases measure (a 3 s limit once passed before the first poll).
    await runner.warmUp(language, LIMITS.memoryMb);
    const outcome = await runner.runOperator({ ...operatorRequest({ language, code }, scratch, tag), ...overrides(tag, scratch) });
    return { outcome, finished: existsSync(join(scratch, `${tag}.finish`)) };
  }

  for (const language of ['python', 'javascript'] as const) {
    describe(language, () => {
      for (const c of CASES) {
        it(`given ${c.given}, when run with each protocol, then both end ${c.status} the same way${c.finished ? ', finish called' : ''}`, async () => {
          const code = c.code[language] + (c.withFinish === false ? '' : FINISH[language]);
          const oneShot = await operate(exec, language, code, c.request);
          const stepwise = await operate(steps, language, code, c.request);
          expect(oneShot.outcome.status, oneShot.outcome.logs).to.equal(c.status);
          expect(oneShot.finished, 'finish called (exec)').to.equal(c.finished);
          expect(comparable(oneShot.outcome, oneShot.finished)).to.deep.equal(comparable(stepwise.outcome, stepwise.finished));
        });
      }

      it('given cancellation during polling, when run with exec, then it ends cancelled (polling stops, no timeout waited for) and finish sees the state', async () => {
        const code = {
          python: 'import json, os\nstate = {}\ndef run(c, p, x):\n    state["job"] = "job-7"\ndef check_completion(c, p, context):\n    open(os.path.join(context["dir"], context["tag"] + ".polled"), "w").close()\n    return {"status": "running"}\ndef finish(c, p, context):\n    with open(os.path.join(context["dir"], context["tag"] + ".finish"), "w") as f:\n        f.write(state["job"])\n',
          javascript: "import { writeFileSync } from 'node:fs';\nconst state = {};\nexport function run() { state.job = 'job-7'; }\nexport function check_completion(c, p, context) { writeFileSync(context.dir + '/' + context.tag + '.polled', ''); return { status: 'running' }; }\nexport function finish(c, p, context) { writeFileSync(context.dir + '/' + context.tag + '.finish', state.job); }\n",
        }[language];
        // Polling forever were cancellation not seen (check_completion always answers running): the test's timeout would end it.
        const { outcome, finished } = await operate(exec, language, code, (tag, dir) => ({ pollIntervalMs: 100, checkCompletionTimeoutMs: 3_600_000, isCancelled: async () => existsSync(join(dir, `${tag}.polled`)) }));
        expect(outcome.status).to.equal('cancelled');
        expect(finished).to.equal(true);
        expect(readFileSync(join(scratch, `run${seq}.finish`), 'utf8')).to.equal('job-7');
      });

      for (const protocol of ['exec', 'steps'] as const) {
        const warm = protocol === 'exec';
        it(`given reuse (${protocol}), when runs leave files, a helper module and module state, then the next run sees none of the files, its own helper, and ${warm ? 'the module state of the same code (a changed code starts afresh)' : 'fresh module state'}`, async () => {
          // Runs 1-3 write a file and a helper module, import it and bump module state; each next
          // run writes another helper of the same name and must import its own, in its own empty
          // directory. Run 4 sends a changed code.
          const code = {
            python: `
import importlib, os, sys
counter = {"n": 0}
def run(connection, payload, context):
    counter["n"] += 1
    with open("helper_mod.py", "w") as f:
        f.write("VERSION = %d\\n" % payload["version"])
    open("leftover.txt", "w").write("x")
    import helper_mod
    return {"pid": os.getpid(), "cwd": os.getcwd(), "n": counter["n"], "helper": helper_mod.VERSION,
            "entries": sorted(os.listdir(".")), "previous": os.path.exists(os.path.join(payload["previous"], "leftover.txt")) if payload["previous"] else None}
`,
            javascript: `
const { writeFileSync, readdirSync, existsSync } = require('node:fs');
const path = require('node:path');
let n = 0;
exports.run = (connection, payload) => {
  n += 1;
  writeFileSync('helper_mod.js', 'module.exports = { VERSION: ' + payload.version + ' };');
  writeFileSync('leftover.txt', 'x');
  const helper = require(path.join(process.cwd(), 'helper_mod.js'));
  return { pid: process.pid, cwd: process.cwd(), n, helper: helper.VERSION, entries: readdirSync('.').sort(),
           previous: payload.previous ? existsSync(path.join(payload.previous, 'leftover.txt')) : null };
};
`,
          }[language];
          const changed = `${code}\n${language === 'python' ? '#' : '//'} changed\n`;
          type Seen = { pid: number; cwd: string; n: number; helper: number; entries: string[]; previous: boolean | null };
          const runs: Seen[] = [];
          for (const version of [1, 2, 3, 4]) {
            const previous = runs.at(-1)?.cwd ?? null;
            const { outcome } = await operate(protocol === 'exec' ? exec : steps, language, version === 4 ? changed : code, () => ({ ...REUSE, payload: { version, previous } }));
            expect(outcome.status, JSON.stringify(outcome)).to.equal('success');
            runs.push(outcome.output as unknown as Seen);
          }
          const file = language === 'python' ? 'user_code.py' : 'user_code.js';
          expect(new Set(runs.map((r) => r.pid)).size).to.equal(1);
          expect(new Set(runs.map((r) => r.cwd)).size).to.equal(4);
          expect(runs.map((r) => [r.n, r.helper, r.previous])).to.deep.equal([
            [1, 1, null],
            [warm ? 2 : 1, 2, false],
            [warm ? 3 : 1, 3, false],
            [1, 4, false],
          ]);
          const helper = `helper_mod.${language === 'python' ? 'py' : 'js'}`;
          // A warm module is not written again: its file stays that of the run that loaded it.
          const loaded = warm ? [true, false, false, true] : [true, true, true, true];
          expect(runs.map((r) => r.entries)).to.deep.equal(loaded.map((written) => (written ? [helper, 'leftover.txt', file] : [helper, 'leftover.txt'])));
        });
      }

      it('given reuse runs that leave no file, when they follow each other, then each starts in a new, empty, writable directory, also after one made its own read-only', async () => {
        const code = {
          python: 'import os\ndef run(c, payload, x):\n    seen = {"pid": os.getpid(), "cwd": os.getcwd(), "home": os.environ["HOME"], "entries": os.listdir("."), "writable": os.access(".", os.W_OK)}\n    if payload.get("lock"):\n        os.chmod(".", 0o500)\n    return seen\n',
          javascript: "const fs = require('node:fs');\nexports.run = (c, payload) => {\n  const seen = { pid: process.pid, cwd: process.cwd(), home: process.env.HOME, entries: fs.readdirSync('.'), writable: (() => { try { fs.accessSync('.', fs.constants.W_OK); return true; } catch { return false; } })() };\n  if (payload.lock) fs.chmodSync('.', 0o500);\n  return seen;\n};\n",
        }[language];
        type Seen = { pid: number; cwd: string; home: string; entries: string[]; writable: boolean };
        const runs: Seen[] = [];
        for (const lock of [false, false, false, true, false, false]) {
          const { outcome } = await operate(exec, language, code, () => ({ ...REUSE, payload: { lock } }));
          expect(outcome.status, JSON.stringify(outcome)).to.equal('success');
          runs.push(outcome.output as unknown as Seen);
        }
        expect(new Set(runs.map((r) => r.pid)).size).to.equal(1);
        expect(new Set(runs.map((r) => r.cwd)).size).to.equal(runs.length);
        expect(runs.every((r) => r.home === r.cwd && r.writable)).to.equal(true);
        // The first run's directory holds its code file; a warm module's runs start in empty ones.
        expect(runs.slice(1).map((r) => r.entries)).to.deep.equal([[], [], [], [], []]);
        for (const r of runs.slice(0, -1)) expect(existsSync(r.cwd), r.cwd).to.equal(false);
      });

      if (language === 'python') {
        it('given reuse and a class of the warm module, when a later run pickles an instance, then its module is found by name', async () => {
          const code = 'import os, pickle, sys\nclass Point:\n    def __init__(self, x):\n        self.x = x\ndef run(c, p, x):\n    return {"pid": os.getpid(), "size": len(pickle.dumps(Point(3))), "registered": sys.modules.get(__name__) is not None}\n';
          const runs = [];
          for (let i = 0; i < 2; i++) {
            const { outcome } = await operate(exec, language, code, () => ({ ...REUSE }));
            expect(outcome.status, JSON.stringify(outcome)).to.equal('success');
            runs.push(outcome.output as { pid: number; registered: boolean });
          }
          expect(runs[1]?.pid).to.equal(runs[0]?.pid);
          expect(runs.map((r) => r.registered)).to.deep.equal([true, true]);
        });
      }

      it('given reuse and an install step, when the same code runs twice in one process, then each run loads it afresh', async () => {
        const code = {
          python: 'import os\ncounter = {"n": 0}\ndef run(c, p, x):\n    counter["n"] += 1\n    return {"pid": os.getpid(), "n": counter["n"]}\n',
          javascript: 'let n = 0;\nexports.run = () => { n += 1; return { pid: process.pid, n }; };\n',
        }[language];
        const runs = [];
        for (let i = 0; i < 2; i++) {
          const { outcome } = await operate(exec, language, code, () => ({ ...REUSE, bashblock: { code: 'true' } }));
          expect(outcome.status, JSON.stringify(outcome)).to.equal('success');
          runs.push(outcome.output as { pid: number; n: number });
        }
        expect(runs[1]?.pid).to.equal(runs[0]?.pid);
        expect(runs.map((r) => r.n)).to.deep.equal([1, 1]);
      });

      it('given reuse and a run that made a read-only folder, when the process resets itself, then the folder is gone and the process is reused', async () => {
        const code = {
          python: 'import os\ndef run(c, p, x):\n    os.makedirs("locked/inner")\n    open("locked/inner/f", "w").close()\n    os.chmod("locked/inner", 0o500)\n    os.chmod("locked", 0o500)\n    return {"pid": os.getpid(), "cwd": os.getcwd(), "entries": sorted(os.listdir("."))}\n',
          javascript: "const fs = require('node:fs');\nexports.run = () => { fs.mkdirSync('locked/inner', { recursive: true }); fs.writeFileSync('locked/inner/f', ''); fs.chmodSync('locked/inner', 0o500); fs.chmodSync('locked', 0o500); return { pid: process.pid, cwd: process.cwd(), entries: fs.readdirSync('.').sort() }; };\n",
        }[language];
        const first = await operate(exec, language, code, () => ({ ...REUSE }));
        const second = await operate(exec, language, code, () => ({ ...REUSE }));
        expect([first.outcome.status, second.outcome.status], second.outcome.logs).to.deep.equal(['success', 'success']);
        type Seen = { pid: number; cwd: string; entries: string[] };
        const [a, b] = [first.outcome.output, second.outcome.output] as [Seen, Seen];
        expect(b.pid).to.equal(a.pid);
        // The same code: the second run uses the warm module, whose file was not written again.
        expect(b.entries).to.deep.equal(['locked']);
      });
    });
  }
});

describe('code runner: runs on processes not started yet (no warm pool)', function () {
  this.timeout(20_000);

  for (const protocol of ['exec', 'steps'] as const) {
    for (const language of ['python', 'javascript'] as const) {
      it(`given ${language}, the ${protocol} protocol and a bashblock, when the run starts its own process, then the code file and the install step find their directory`, async () => {
        // A forked python process makes its directory itself: nothing may be written there before it is ready.
        const runner = new ProcessCodeRunner({ poolSize: 0, protocol });
        try {
          const code = {
            python: 'def run(c, p, x):\n    return {"installed": open("installed.txt").read()}\n',
            javascript: "const { readFileSync } = require('node:fs');\nexports.run = () => ({ installed: readFileSync('installed.txt', 'utf8') });\n",
          }[language];
          for (const bashblock of [{ code: 'printf yes > installed.txt' }, null]) {
            const outcome = await runner.runOperator({
              ...bareOperatorRequest({ language, code: bashblock ? code : code.replace(/open\("installed.txt"\).read\(\)|readFileSync\('installed.txt', 'utf8'\)/, '"no install"') }),
              bashblock,
            });
            expect(outcome.status, JSON.stringify(outcome)).to.equal('success');
            expect(outcome.output).to.deep.equal({ installed: bashblock ? 'yes' : 'no install' });
          }
        } finally {
          await runner.close();
        }
      });
    }
  }
});

describe('exec protocol: an abandon that crossed the line announcing finish leaves finish alone', function () {
  this.timeout(20_000);

  for (const language of ['python', 'javascript'] as const) {
    it(`given a ${language} exec in finish, when an interrupt sent before the runner read that line arrives, then finish completes`, async function () {
      const executable = language === 'python' ? resolvePython() : process.execPath;
      if (!executable) this.skip();
      const dir = makeRunDir();
      const proc = new RuntimeProcess({
        language,
        memoryMb: 128,
        dir,
        memoryHeadroomMb: 64,
        launch: (events) => new SpawnedProcess({ label: language, executable: executable ?? '', args: runtimeArgs(language, 128), dir }, events),
      });
      try {
        await proc.ready;
        const code = {
          python: 'import time\ndef run(c, p, x):\n    return {"ran": True}\ndef finish(c, p, x):\n    time.sleep(0.4)\n    return {"finished": True}\n',
          javascript: 'export function run() { return { ran: true }; }\nexport async function finish() { await new Promise((r) => setTimeout(r, 400)); return { finished: true }; }\n',
        }[language];
        const file = join(dir, language === 'python' ? 'user_code.py' : 'user_code.js');
        const { id, events } = proc.exec({ op: 'exec', plan: 'operator', file, code, args: [{}, {}, {}], pollIntervalMs: 50, checkCompletionTimeoutMs: 1000 }, false);
        const lines: ExecEvent[] = [];
        const next = async (stream: ExecEvents): Promise<ExecEvent> => {
          for (;;) {
            const event = stream.take();
            if (event) {
              lines.push(event);
              return event;
            }
            await stream.available();
          }
        };
        await next(events); // load
        const run = await next(events);
        expect(run).to.deep.include({ fn: 'run', ok: true, next: 'finish' });
        // The runner had read only the load line when it decided to give up: a stale abandon.
        proc.interruptExec(id, 1);
        const finish = await next(events);
        expect(finish).to.deep.include({ fn: 'finish', ok: true, value: { finished: true }, done: true });
      } finally {
        proc.kill('killed');
        await proc.exited;
        await removeRunDir(dir);
      }
    });
  }
});
