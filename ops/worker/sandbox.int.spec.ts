import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Language, OperatorRunRequest } from '../../shared/ports/CodeRunner.ts';
import { secureDataDir } from '../secureDataDir.ts';
import { LIMITS } from './operatorRequests.ts';
import { ProcessCodeRunner } from './ProcessCodeRunner.ts';
import { decideSandbox, DEFAULT_RUN_AS } from './sandbox.ts';

/**
 * What a hostile operator tries (issue 19): read every file under DATA_DIR, every /proc/<pid>/environ,
 * and leave a detached child behind. With the runner as the service builds it as root (a uid of
 * DEFAULT_RUN_AS per process), nothing is read and the child is gone once the run is over.
 */
const HOSTILE: Record<Language, string> = {
  python: `
import os, subprocess

def run(connection, payload, context):
    data_dir = context["dataDir"]
    read = []
    candidates = [os.path.join(data_dir, "keys", "jwt-private.pem"), os.path.join(data_dir, "events.sqlite")]
    for root, dirs, files in os.walk(data_dir):
        candidates += [os.path.join(root, name) for name in files]
    for path in candidates:
        try:
            with open(path, "rb") as f:
                read.append([path, f.read(40).decode("latin1")])
        except OSError:
            pass
    environs = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as f:
                f.read()
            environs.append([int(name), os.stat("/proc/" + name).st_uid])
        except OSError:
            pass
    child = subprocess.Popen(["sleep", "300"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return {"read": read, "environs": environs, "child": child.pid, "uid": os.getuid(), "pid": os.getpid()}
`,
  javascript: `
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');

exports.run = (connection, payload, context) => {
  const dataDir = context.dataDir;
  const candidates = [path.join(dataDir, 'keys', 'jwt-private.pem'), path.join(dataDir, 'events.sqlite')];
  const walk = (dir) => {
    let entries = [];
    try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
    for (const entry of entries) {
      if (entry.isDirectory()) walk(path.join(dir, entry.name));
      else candidates.push(path.join(dir, entry.name));
    }
  };
  walk(dataDir);
  const read = [];
  for (const file of candidates) {
    try { read.push([file, fs.readFileSync(file, 'latin1').slice(0, 40)]); } catch {}
  }
  const environs = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\\d+$/.test(name)) continue;
    try {
      fs.readFileSync('/proc/' + name + '/environ');
      environs.push([Number(name), fs.statSync('/proc/' + name).uid]);
    } catch {}
  }
  const child = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
  child.unref();
  return { read, environs, child: child.pid, uid: process.getuid(), pid: process.pid };
};
`,
};

interface Seen {
  read: Array<[string, string]>;
  environs: Array<[number, number]>;
  child: number;
  uid: number;
  pid: number;
}

/** Alive and not a zombie. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return condition();
}

function request(language: Language, code: string, context: Record<string, unknown>): OperatorRunRequest {
  return {
    codeblock: { language, code },
    connection: {},
    payload: {},
    context,
    limits: LIMITS,
    pollIntervalMs: 50,
    checkCompletionTimeoutMs: 1000,
    isCancelled: async () => false,
  };
}


/** The first line a service script prints (its pids); rejects if it ends before printing one. */
const firstLine = (child: ReturnType<typeof spawn>): Promise<string> =>
  new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\n')) resolve(text.split('\n')[0] ?? '');
    });
    child.once('exit', () => reject(new Error(`the service ended early: ${text}`)));
  });

describe('Sandbox: run processes never hold the service\'s rights', function () {
  this.timeout(120_000);
  let scratch: string;
  let dataDir: string;

  before(function () {
    if (process.getuid?.() !== 0) {
      console.log('    (skipped: the default sandbox drops root to another uid; this process is not root)');
      this.skip();
    }
    scratch = mkdtempSync(join(tmpdir(), 'sandbox-spec-'));
    dataDir = join(scratch, 'data');
    mkdirSync(join(dataDir, 'keys'), { recursive: true });
    writeFileSync(join(dataDir, 'keys', 'jwt-private.pem'), '-----BEGIN PRIVATE KEY-----\nsecret\n');
    writeFileSync(join(dataDir, 'events.sqlite'), 'SQLite format 3\0secret events');
    writeFileSync(join(dataDir, 'events.sqlite-wal'), 'wal');
    secureDataDir(dataDir);
  });

  after(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  for (const language of ['python', 'javascript'] as const) {
    for (const forked of [true, false]) {
      const how = forked ? 'forked' : `${language === 'python' ? 'spawned' : 'exec\'d'}`;
      it(`given ${language} code (${how}) that reads DATA_DIR and every /proc/*/environ and starts a detached child, when run, then nothing is read and the child ends with the run`, async () => {
        const runner = new ProcessCodeRunner({
          poolSize: 1,
          runAs: { ...DEFAULT_RUN_AS }, sandbox: false,
          ...(forked ? {} : language === 'python' ? { pythonForkServer: false } : { nodeForkServer: false }),
        });
        try {
          const outcome = await runner.runOperator(request(language, HOSTILE[language], { dataDir }));
          expect(outcome.status, JSON.stringify(outcome)).to.equal('success');
          const seen = (outcome as { output: unknown }).output as Seen;
          expect(seen.uid).to.be.within(DEFAULT_RUN_AS.uid, DEFAULT_RUN_AS.uid + DEFAULT_RUN_AS.count - 1);
          expect(seen.read).to.deep.equal([]);
          // Only its own processes' environments (its own uid), never the service's or a fork server's.
          for (const [pid, uid] of seen.environs) expect(uid, `read /proc/${pid}/environ`).to.equal(seen.uid);
          const service = [process.pid, ...runner.forkServerPids(), ...runner.nodeForkServerPids()];
          expect(seen.environs.map(([pid]) => pid)).to.not.include.members(service);
          await runner.cleanedUp();
          // Forked (exec'd node too: forked by the Python fork server) processes have a cgroup of their own.
          if (forked || language === 'javascript') {
            // The run's cgroup is swept once its process is reaped.
            expect(await waitUntil(() => !running(seen.child), 15_000), `detached child ${seen.child} still running`).to.equal(true);
          } else {
            // Spawned from the service: no cgroup of its own, a detached child outlives the run (README, Security).
            process.kill(seen.child, 'SIGKILL');
          }
        } finally {
          await runner.close();
        }
      });
    }
  }

  it('given an install step that leaves a detached job, when the run ends, then the job is gone too (it joined the run\'s cgroup)', async () => {
    const runner = new ProcessCodeRunner({ poolSize: 0, runAs: { ...DEFAULT_RUN_AS }, sandbox: false });
    try {
      const outcome = await runner.runOperator({
        ...request('python', 'def run(c, p, x):\n    return {"job": int(open("job.pid").read()), "cgroup": open("cgroup.txt").read()}\n', {}),
        // Its very first command already runs in the run's cgroup (joined before bash starts, not
        // moved in afterwards: a job forked before such a move escaped on a loaded machine).
        bashblock: { code: 'cat /proc/self/cgroup > cgroup.txt; setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > job.pid' },
      });
      expect(outcome.status, JSON.stringify(outcome)).to.equal('success');
      const { job, cgroup } = (outcome as unknown as { output: { job: number; cgroup: string } }).output;
      expect(cgroup.split('\n').find((line) => /:memory:/.test(line)), cgroup).to.match(/\/coderun-\d+\/c\d+\/t$/);
      expect(await waitUntil(() => !running(job), 15_000), `install job ${job} still running`).to.equal(true);
    } finally {
      await runner.close();
    }
  });

  it('given processes alive at once, when they run, then each has its own uid (none can reach another run\'s process)', async () => {
    const runner = new ProcessCodeRunner({ poolSize: 3, runAs: { ...DEFAULT_RUN_AS }, sandbox: false });
    try {
      const code = 'import os, time\n\ndef run(connection, payload, context):\n    time.sleep(0.3)\n    return {"uid": os.getuid()}\n';
      const outcomes = await Promise.all([0, 1, 2].map(() => runner.runOperator(request('python', code, {}))));
      const uids = outcomes.map((outcome) => (outcome as unknown as { output: { uid: number } }).output.uid);
      expect(new Set(uids).size).to.equal(3);
    } finally {
      await runner.close();
    }
  });

  it('given two runs at once, when one reads /proc/<pid>/environ of a process the other started, then it is denied (its uid is another)', async () => {
    const shared = mkdtempSync(join(tmpdir(), 'sandbox-shared-'));
    chmodSync(shared, 0o777);
    const runner = new ProcessCodeRunner({ poolSize: 2, runAs: { ...DEFAULT_RUN_AS }, sandbox: false });
    try {
      // A: starts a child (exec'd, so dumpable: readable by its own uid) and publishes its pid.
      const victim = `import os, subprocess, time

def run(c, p, x):
    child = subprocess.Popen(["sleep", "20"], env={"SECRET_OF_A": "a-connection-password"})
    with open(os.path.join(x["shared"], "pid.tmp"), "w") as f:
        f.write(str(child.pid))
    os.rename(os.path.join(x["shared"], "pid.tmp"), os.path.join(x["shared"], "pid"))
    time.sleep(3)
    child.kill()
    return {"uid": os.getuid()}
`;
      const attacker = `import os, time

def run(c, p, x):
    path = os.path.join(x["shared"], "pid")
    for _ in range(400):
        if os.path.exists(path):
            break
        time.sleep(0.025)
    pid = int(open(path).read())
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return {"read": f.read().decode("latin1"), "uid": os.getuid()}
    except OSError as error:
        return {"denied": error.errno, "uid": os.getuid()}
`;
      const [a, b] = await Promise.all([runner.runOperator(request('python', victim, { shared })), runner.runOperator(request('python', attacker, { shared }))]);
      expect(a.status, JSON.stringify(a)).to.equal('success');
      expect(b.status, JSON.stringify(b)).to.equal('success');
      const seen = (b as unknown as { output: { read?: string; denied?: number; uid: number } }).output;
      expect(seen.uid).to.not.equal((a as unknown as { output: { uid: number } }).output.uid);
      expect(seen.read).to.equal(undefined);
      expect(seen.denied).to.equal(13); // EACCES
    } finally {
      await runner.close();
      rmSync(shared, { recursive: true, force: true });
    }
  });

  it('given a forked run whose detached child allocates beyond the memory limit, when run, then the child is killed: the limit covers the whole tree', async function () {
    if (!readFileSync('/proc/self/cgroup', 'utf8').includes(':memory:')) {
      console.log('    (skipped: no memory cgroup (v1) on this machine: the limit is per process there)');
      this.skip();
    }
    const runner = new ProcessCodeRunner({ poolSize: 0, runAs: { ...DEFAULT_RUN_AS }, sandbox: false });
    try {
      // node has no RLIMIT_AS (Python children inherit theirs): only the run's cgroup stops this one.
      const code = `const { spawn } = require('node:child_process');
exports.run = () => new Promise((resolve) => {
  const child = spawn(process.execPath, ['-e', 'const b = Buffer.alloc(400 * 1024 * 1024, 1); setTimeout(() => {}, 30000)'], { detached: true, stdio: 'ignore' });
  child.on('exit', (code, signal) => resolve({ code, signal }));
});`;
      const outcome = await runner.runOperator({ ...request('javascript', code, {}), limits: { ...LIMITS, memoryMb: 128, timeoutMs: 60_000 } });
      expect(outcome.status, JSON.stringify(outcome)).to.equal('success');
      expect((outcome as { output: unknown }).output).to.deep.equal({ code: null, signal: 'SIGKILL' });
    } finally {
      await runner.close();
    }
  });

  it('given the configured python3 that the run user cannot read, when a run comes, then the system one is used', async () => {
    const unreadable = join(scratch, 'private');
    mkdirSync(unreadable, { mode: 0o700 });
    writeFileSync(join(unreadable, 'python3'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    const fallback = new ProcessCodeRunner({ poolSize: 0, runAs: { ...DEFAULT_RUN_AS }, sandbox: false, pythonPath: join(unreadable, 'python3') });
    try {
      const outcome = await fallback.runOperator(request('python', 'import sys\n\ndef run(c, p, x):\n    return {"python": sys.executable}\n', {}));
      expect(outcome.status, JSON.stringify(outcome)).to.equal('success');
      expect((outcome as unknown as { output: { python: string } }).output.python).to.equal('/usr/bin/python3');
    } finally {
      await fallback.close();
    }
  });
});

describe('Sandbox: shutdown', function () {
  this.timeout(120_000);

  it('given runners closed while their processes are starting, running or pooled, when closed, then no coderun-* directory is left', async () => {
    const root = mkdtempSync(join(tmpdir(), 'sandbox-close-'));
    try {
      for (let round = 0; round < 6; round += 1) {
        const runner = new ProcessCodeRunner({ tmpRoot: root, poolSize: 2, runAs: { ...DEFAULT_RUN_AS }, sandbox: false, prewarm: [{ language: 'python', memoryMb: 128 }, { language: 'javascript', memoryMb: 128 }] });
        const runs = [
          runner.runOperator(request('python', 'import time\n\ndef run(c, p, x):\n    open("left.txt", "w").write("x")\n    time.sleep(5)\n', {})),
          runner.runOperator(request('javascript', 'exports.run = () => new Promise(() => require("node:fs").writeFileSync("left.txt", "x"));', {})),
        ];
        // Closed at once (processes still being forked) or a little later (runs in progress).
        if (round % 2 === 1) await new Promise((resolve) => setTimeout(resolve, 300 * round));
        await runner.close();
        await Promise.allSettled(runs);
        expect(readdirSync(root).filter((name) => name.startsWith('coderun-')), `round ${round}`).to.deep.equal([]);
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('Sandbox: processes of a killed service', function () {
  this.timeout(120_000);

  it('given a service (runner) with fork servers, pooled and busy processes in an endless loop that left detached children, when it is killed with SIGKILL, then none of its processes nor run directories is left after a few seconds', async function () {
    const scratch = mkdtempSync(join(tmpdir(), 'sandbox-kill-'));
    chmodSync(scratch, 0o777);
    const script = join(scratch, 'service.ts');
    const runs = join(scratch, 'runs');
    mkdirSync(runs);
    const runnerModule = new URL('./ProcessCodeRunner.ts', import.meta.url).pathname;
    const sandboxModule = new URL('./sandbox.ts', import.meta.url).pathname;
    // The busy runs first leave a detached child each, whose pid they write into the scratch folder.
    const js = `const c = require('node:child_process').spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
require('node:fs').writeFileSync(${JSON.stringify(join(scratch, 'js.pid'))}, String(c.pid));
exports.run = () => { for (;;) {} };`;
    const py = `import subprocess
child = subprocess.Popen(['sleep', '300'], start_new_session=True)
open(${JSON.stringify(join(scratch, 'py.pid'))}, 'w').write(str(child.pid))

def run(c, p, x):
    while True:
        pass
`;
    writeFileSync(
      script,
      `import { ProcessCodeRunner } from ${JSON.stringify(runnerModule)};
import { DEFAULT_RUN_AS } from ${JSON.stringify(sandboxModule)};
const runner = new ProcessCodeRunner({ poolSize: 2, tmpRoot: ${JSON.stringify(runs)}, runAs: { ...DEFAULT_RUN_AS }, sandbox: false, prewarm: [{ language: 'python', memoryMb: 128 }, { language: 'javascript', memoryMb: 128 }] });
const limits = { timeoutMs: 600_000, memoryMb: 128, maxOutputBytes: 65536 };
const base = { connection: {}, payload: {}, context: {}, limits, pollIntervalMs: 50, checkCompletionTimeoutMs: 1000, isCancelled: async () => false };
void runner.runOperator({ ...base, codeblock: { language: 'javascript', code: ${JSON.stringify(js)} } });
void runner.runOperator({ ...base, codeblock: { language: 'python', code: ${JSON.stringify(py)} } });
setTimeout(() => {
  console.log(JSON.stringify([...runner.processIds(), ...runner.forkServerPids(), ...runner.nodeForkServerPids()]));
}, 3000);
`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const line = await firstLine(child);
    const pids = [...(JSON.parse(line) as number[]), ...['js.pid', 'py.pid'].map((name) => Number(readFileSync(join(scratch, name), 'utf8')))];
    // Both fork servers and at least the two busy runs and the warm ones.
    expect(pids.length).to.be.greaterThanOrEqual(6);
    expect(pids.every(running)).to.equal(true);
    child.kill('SIGKILL');
    const gone = await waitUntil(() => pids.every((pid) => !running(pid)), 10_000);
    const describe = (pid: number) => {
      try {
        return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')} ${readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').filter((l) => /^(State|PPid|Uid)/.test(l)).join(' ')}`;
      } catch {
        return `${pid} gone`;
      }
    };
    expect(pids.filter(running).map(describe), 'still running').to.deep.equal([]);
    expect(gone).to.equal(true);
    // Nor any of their directories (the fork servers remove them when the service is gone).
    expect(await waitUntil(() => readdirSync(runs).length === 0, 10_000), readdirSync(runs).join(', ')).to.equal(true);
    rmSync(scratch, { recursive: true, force: true });
  });

  it('given a service whose runtimes it spawned itself (no fork server) busy in an endless loop, when it is killed with SIGKILL, then they end too (parent-death signal), not spin on with parent pid 1', async () => {
    // Their directories stay behind here (nobody is left to remove them: README, Security); scratch is removed below.
    const scratch = mkdtempSync(join(tmpdir(), 'sandbox-kill-spawned-'));
    const script = join(scratch, 'service.ts');
    const runnerModule = new URL('./ProcessCodeRunner.ts', import.meta.url).pathname;
    writeFileSync(
      script,
      `import { ProcessCodeRunner } from ${JSON.stringify(runnerModule)};
const runner = new ProcessCodeRunner({ poolSize: 1, tmpRoot: ${JSON.stringify(scratch)}, pythonForkServer: false, nodeForkServer: false, runAs: { uid: 64000, gid: 64000, count: 1000 }, sandbox: false });
const limits = { timeoutMs: 600_000, memoryMb: 128, maxOutputBytes: 65536 };
const base = { connection: {}, payload: {}, context: {}, limits, pollIntervalMs: 50, checkCompletionTimeoutMs: 1000, isCancelled: async () => false };
void runner.runOperator({ ...base, codeblock: { language: 'javascript', code: 'exports.run = () => { for (;;) {} };' } });
void runner.runOperator({ ...base, codeblock: { language: 'python', code: 'def run(c, p, x):\\n    while True:\\n        pass\\n' } });
setTimeout(() => console.log(JSON.stringify(runner.processIds())), 3000);
`,
    );
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      const line = await firstLine(child);
      const pids = JSON.parse(line) as number[];
      expect(pids.length).to.be.greaterThanOrEqual(2);
      expect(pids.every(running)).to.equal(true);
      child.kill('SIGKILL');
      expect(await waitUntil(() => pids.every((pid) => !running(pid)), 10_000), `still running: ${pids.filter(running).join(', ')}`).to.equal(true);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});


describe('Sandbox: code runs refused', () => {
  it('given a runner disabled by the sandbox decision (not root, nothing configured), when runs come, then each is an error with that message and no process is started', async () => {
    const message = decideSandbox({ isRoot: false, setting: 'auto', runAs: null, bwrapUsable: false });
    if (message.kind !== 'refused') throw new Error('expected a refusal');
    const runner = new ProcessCodeRunner({ poolSize: 2, disabled: message.message, prewarm: [{ language: 'python', memoryMb: 128 }] });
    try {
      for (const language of ['python', 'javascript'] as const) {
        const outcome = await runner.runOperator(request(language, language === 'python' ? 'def run(c, p, x):\n    return {}\n' : 'exports.run = () => ({});', {}));
        expect(outcome.status).to.equal('error');
        expect('message' in outcome ? outcome.message : '').to.equal(message.message);
      }
      expect(runner.processIds()).to.deep.equal([]);
      expect(runner.forkServerPids()).to.deep.equal([]);
    } finally {
      await runner.close();
    }
  });
});
