import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Language, OperatorOutcome, OperatorRunRequest } from '../../shared/ports/CodeRunner.ts';
import { REUSE } from './operatorRequests.ts';
import { ProcessCodeRunner } from './ProcessCodeRunner.ts';
import { sandboxLibraryBuilt } from './runSandbox.ts';

/**
 * Isolation in depth (issue 31): as root, every run process has namespaces, a root and limits of
 * its own (native/sandbox.c). Hostile code of each finding, in Python and JavaScript: a link planted
 * for the service to write through, another run's argv and temp files, a uid's old files, processes,
 * disk, a tree no removal could finish, DATA_DIR and the checkout.
 */
const isRoot = process.getuid?.() === 0;
const LANGUAGES: Language[] = ['python', 'javascript'];
/** A range of our own, apart from a service's default 64000-64999 and the other specs' ranges. */
const RANGE = { uid: 63_100, gid: 63_100, count: 16 };

function request(language: Language, code: string, extra: Partial<OperatorRunRequest> = {}): OperatorRunRequest {
  return {
    codeblock: { language, code },
    connection: {},
    payload: {},
    context: {},
    limits: { timeoutMs: 60_000, memoryMb: 256, maxOutputBytes: 64 * 1024 },
    pollIntervalMs: 50,
    checkCompletionTimeoutMs: 60_000,
    isCancelled: async () => false,
    ...extra,
  };
}

const output = (outcome: OperatorOutcome): Record<string, unknown> => {
  expect(outcome.status, JSON.stringify(outcome)).to.equal('success');
  return outcome.output;
};

const errorOf = (outcome: OperatorOutcome): string => {
  expect(outcome.status, JSON.stringify(outcome)).to.equal('error');
  return 'message' in outcome ? outcome.message : '';
};

describe('run sandbox (issue 31: isolation in depth)', function () {
  this.timeout(180_000);
  let runner: ProcessCodeRunner;
  let secretDir: string;

  before(function () {
    if (!isRoot) {
      console.log('      (skipped: the run sandbox is for a service running as root)');
      return this.skip();
    }
    if (!sandboxLibraryBuilt()) {
      if (process.env.CI === 'true' || process.env.CI === '1') throw new Error('the run sandbox library is not built (npm ci builds it)');
      console.log('      (skipped: the run sandbox library is not built)');
      return this.skip();
    }
    // Stands for DATA_DIR: a root-owned 0700 directory the runs must not even see.
    secretDir = mkdtempSync(join(tmpdir(), 'sandbox-secret-'));
    writeFileSync(join(secretDir, 'jwt-private.pem'), 'PRIVATE KEY', { mode: 0o600 });
    runner = new ProcessCodeRunner({ runAs: RANGE, poolSize: 0, hidden: [secretDir], maxIdleReusable: 4 });
  });

  after(async () => {
    await runner?.close();
    if (secretDir) rmSync(secretDir, { recursive: true, force: true });
  });

  for (const language of LANGUAGES) {
    describe(language, () => {
      it('given a reuse process whose run planted links in its next run directories, when the next run has a bashblock, then the root-owned target is unchanged', async () => {
        // A root-owned 0600 file of the host, and a reuse run that keeps planting links to it where
        // the next run's code file will be (run-<n> of its home), from a thread that outlives the run.
        const victim = join(secretDir, '..', `sandbox-victim-${language}-${process.pid}`);
        writeFileSync(victim, 'ROOT ONLY\n', { mode: 0o600 });
        const plant =
          language === 'python'
            ? `import os, threading, time
VICTIM = ${JSON.stringify(victim)}
def plant():
    home = os.environ["HOME"].rsplit("/run-", 1)[0]
    for _ in range(400):
        for n in range(0, 8):
            d = os.path.join(home, "run-%d" % n)
            try:
                os.makedirs(d, exist_ok=True)
                os.symlink(VICTIM, os.path.join(d, "user_code.py"))
            except OSError:
                pass
        time.sleep(0.005)
def run(connection, payload, context):
    threading.Thread(target=plant, daemon=True).start()
    return {"home": os.environ["HOME"], "victim_visible": os.path.exists(VICTIM)}
`
            : `const fs = require('fs'); const path = require('path');
const VICTIM = ${JSON.stringify(victim)};
exports.run = () => {
  const home = process.env.HOME.split('/run-')[0];
  let left = 400;
  const timer = setInterval(() => {
    for (let n = 0; n < 8; n++) {
      const d = path.join(home, 'run-' + n);
      try { fs.mkdirSync(d, { recursive: true }); fs.symlinkSync(VICTIM, path.join(d, 'user_code.js')); } catch {}
    }
    if (--left === 0) clearInterval(timer);
  }, 5);
  timer.unref();
  return { home: process.env.HOME, victim_visible: fs.existsSync(VICTIM) };
};
`;
        const first = output(await runner.runOperator(request(language, plant, { ...REUSE })));
        expect(first.victim_visible, 'the host file is not even visible to the run').to.equal(false);
        const second = await runner.runOperator(
          request(language, language === 'python' ? 'def run(c, p, x):\n    return {"ok": True}\n' : 'exports.run = () => ({ ok: true });\n', {
            ...REUSE,
            bashblock: { code: 'echo installing' },
          }),
        );
        expect(second.status).to.be.oneOf(['success', 'error']);
        expect(readFileSync(victim, 'utf8')).to.equal('ROOT ONLY\n');
        expect(statSync(victim).uid).to.equal(0);
        expect(statSync(victim).mode & 0o777).to.equal(0o600);
        rmSync(victim, { force: true });
      });

      it('given DATA_DIR and the checkout, when a run looks for them, then neither is there (only the runtime files)', async () => {
        const code =
          language === 'python'
            ? `import os
def run(connection, payload, context):
    return {"secret": os.path.exists(${JSON.stringify(secretDir)}) and os.listdir(${JSON.stringify(secretDir)}),
            "package": os.path.exists(${JSON.stringify(join(process.cwd(), 'package.json'))}),
            "root": sorted(os.listdir("/")), "uid": os.getuid(), "pid": os.getpid(),
            "run_sockets": os.listdir("/run"), "home": os.path.exists("/root")}
`
            : `const fs = require('fs');
exports.run = () => ({
  secret: fs.existsSync(${JSON.stringify(secretDir)}) && fs.readdirSync(${JSON.stringify(secretDir)}),
  package: fs.existsSync(${JSON.stringify(join(process.cwd(), 'package.json'))}),
  root: fs.readdirSync('/').sort(), uid: process.getuid(), run_sockets: fs.readdirSync('/run'), home: fs.existsSync('/root'),
});
`;
        const seen = output(await runner.runOperator(request(language, code)));
        expect(seen.secret).to.satisfy((value: unknown) => value === false || (Array.isArray(value) && value.length === 0));
        expect(seen.package).to.equal(false);
        expect(seen.run_sockets).to.deep.equal([]);
        expect(seen.home).to.equal(false);
        expect(seen.uid).to.be.within(RANGE.uid, RANGE.uid + RANGE.count - 1);
      });

      it("given another run holding a secret in its argv and in /tmp and /dev/shm files, when a run lists processes and temp dirs, then it sees only its own", async () => {
        const secret = `s3cr3t-${language}-${process.pid}`;
        const holder =
          language === 'python'
            ? `import subprocess, time
def run(connection, payload, context):
    open("/tmp/${secret}", "w").write("x")
    open("/dev/shm/${secret}", "w").write("x")
    subprocess.Popen(["/bin/sleep", "20", "${secret}"])
    time.sleep(3)
    return {"ok": True}
`
            : `const fs = require('fs'); const { spawn } = require('child_process');
exports.run = async () => {
  fs.writeFileSync('/tmp/${secret}', 'x'); fs.writeFileSync('/dev/shm/${secret}', 'x');
  spawn('/bin/sleep', ['20', '${secret}'], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 3000));
  return { ok: true };
};
`;
        const looker =
          language === 'python'
            ? `import os
def run(connection, payload, context):
    argv = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                argv.append(open("/proc/%s/cmdline" % name, "rb").read().decode("latin1"))
            except OSError:
                pass
    return {"argv": argv, "tmp": os.listdir("/tmp"), "shm": os.listdir("/dev/shm"), "pids": [n for n in os.listdir("/proc") if n.isdigit()]}
`
            : `const fs = require('fs');
exports.run = () => {
  const argv = [];
  for (const name of fs.readdirSync('/proc')) if (/^\\d+$/.test(name)) { try { argv.push(fs.readFileSync('/proc/' + name + '/cmdline', 'latin1')); } catch {} }
  return { argv, tmp: fs.readdirSync('/tmp'), shm: fs.readdirSync('/dev/shm'), pids: fs.readdirSync('/proc').filter((n) => /^\\d+$/.test(n)) };
};
`;
        const holding = runner.runOperator(request(language, holder));
        await new Promise((resolve) => setTimeout(resolve, 1500));
        const seen = output(await runner.runOperator(request(language, looker)));
        expect((seen.argv as string[]).join(' ')).not.to.include(secret);
        expect(seen.tmp as string[]).not.to.include(secret);
        expect(seen.shm as string[]).not.to.include(secret);
        expect(seen.pids).to.deep.equal(['1']);
        output(await holding);
        await runner.cleanedUp();
        // Nothing of it stays on the host either.
        expect(existsSync(join('/tmp', secret))).to.equal(false);
        expect(existsSync(join('/dev/shm', secret))).to.equal(false);
        // And the next run with the same identity (a range of one) finds none of it.
        const single = new ProcessCodeRunner({ runAs: { uid: RANGE.uid + RANGE.count, gid: RANGE.gid + RANGE.count, count: 1 }, poolSize: 0 });
        try {
          output(await single.runOperator(request(language, holder.replace('time.sleep(3)', 'pass').replace('setTimeout(r, 3000)', 'setTimeout(r, 1)'))));
          const after = output(await single.runOperator(request(language, looker)));
          expect(after.tmp as string[]).not.to.include(secret);
          expect(after.shm as string[]).not.to.include(secret);
        } finally {
          await single.close();
        }
      });

      it('given a run that starts 1,200 processes, when it passes the process limit, then it ends with an error naming WORKER_MAX_PROCESSES', async () => {
        const code =
          language === 'python'
            ? `import subprocess
def run(connection, payload, context):
    started = []
    for i in range(1200):
        try:
            started.append(subprocess.Popen(["/bin/sleep", "60"]))
        except OSError:
            pass
    return {"started": len(started)}
`
            : `const { spawn } = require('child_process');
exports.run = async () => {
  let started = 0;
  for (let i = 0; i < 1200; i++) { try { const c = spawn('/bin/sleep', ['60'], { stdio: 'ignore' }); c.on('error', () => {}); started++; } catch {} }
  await new Promise((r) => setTimeout(r, 5000));
  return { started };
};
`;
        const message = errorOf(await runner.runOperator(request(language, code)));
        expect(message).to.include('WORKER_MAX_PROCESSES=512');
      });

      it('given a run that writes 3 GiB into its directory, when its disk is full, then it ends with an error naming WORKER_DISK_MB and the space is back', async () => {
        const code =
          language === 'python'
            ? `import os
def run(connection, payload, context):
    block = b"x" * (1 << 20)
    with open("big", "wb") as out:
        for _ in range(3 * 1024):
            out.write(block)
    return {"written": True}
`
            : `const fs = require('fs');
exports.run = () => {
  const block = Buffer.alloc(1 << 20, 120);
  const fd = fs.openSync('big', 'w');
  for (let i = 0; i < 3 * 1024; i++) fs.writeSync(fd, block);
  return { written: true };
};
`;
        // Memory above the disk limit: the tmpfs's pages count against the run's memory too.
        const message = errorOf(await runner.runOperator(request(language, code, { limits: { timeoutMs: 120_000, memoryMb: 1600, maxOutputBytes: 64 * 1024 } })));
        expect(message).to.include('WORKER_DISK_MB=1024');
      });

      it('given a run that leaves a 40-level tree of long names, when it ends, then it is gone and the next runs go on', async () => {
        const code =
          language === 'python'
            ? `import os
def run(connection, payload, context):
    home = os.getcwd()
    for i in range(40):
        name = ("d%02d" % i) * 60
        os.mkdir(name)
        os.chdir(name)
    os.chdir(home)
    os.chmod(sorted(n for n in os.listdir(".") if n.startswith("d00"))[0], 0o500)
    return {"depth": 40}
`
            : `const fs = require('fs'); const path = require('path');
exports.run = () => {
  const home = process.cwd();
  for (let i = 0; i < 40; i++) { const name = ('d' + String(i).padStart(2, '0')).repeat(60); fs.mkdirSync(name); process.chdir(name); }
  process.chdir(home);
  fs.chmodSync(fs.readdirSync('.').find((n) => n.startsWith('d00')), 0o500);
  return { depth: 40 };
};
`;
        const before = readdirSync('/tmp').filter((name) => name.startsWith('coderun-')).length;
        output(await runner.runOperator(request(language, code, { ...REUSE })));
        output(await runner.runOperator(request(language, code, { ...REUSE })));
        await runner.cleanedUp();
        expect(readdirSync('/tmp').filter((name) => name.startsWith('coderun-')).length).to.be.at.most(before);
      });
    });
  }
  it("given the runs' cpu cgroups, when a run reads its own, then it sits beside the service's tasks (its weight is against them, not only against the other runs)", async () => {
    const code = 'def run(connection, payload, context):\n    return {"cgroup": open("/proc/self/cgroup").read()}\n';
    const cpuOf = (text: string): string | undefined => text.split('\n').map((line) => line.split(':')).find(([, controllers]) => controllers?.split(',').includes('cpu'))?.[2];
    const own = cpuOf(readFileSync('/proc/self/cgroup', 'utf8'));
    const run = cpuOf(String(output(await runner.runOperator(request('python', code))).cgroup));
    if (own === undefined || !existsSync(join('/sys/fs/cgroup/cpu', own))) return void console.log('      (no cgroup v1 cpu hierarchy here: nothing to check)');
    expect(run, 'the run has a cpu cgroup of its own').to.match(/\/coderun-\d+-\d+-c\d+$/);
    expect(run?.slice(0, run.lastIndexOf('/')) || '/').to.equal(own);
  });

  it('given CODERUN_ISOLATION=off (the bench baseline), when a runner with the limits the service passes runs code, then the run has no sandbox but keeps its own uid', async () => {
    const code = 'import os, socket\ndef run(connection, payload, context):\n    return {"host": socket.gethostname(), "uid": os.getuid()}\n';
    const saved = process.env.CODERUN_ISOLATION;
    process.env.CODERUN_ISOLATION = 'off';
    // A range apart from the suite's: no identity shared with its idle reuse processes.
    const bareRange = { uid: RANGE.uid + RANGE.count, gid: RANGE.gid + RANGE.count, count: 2 };
    const bare = new ProcessCodeRunner({ runAs: bareRange, poolSize: 0, sandbox: { diskMb: 64 } });
    if (saved === undefined) delete process.env.CODERUN_ISOLATION;
    else process.env.CODERUN_ISOLATION = saved;
    try {
      const seen = output(await bare.runOperator(request('python', code)));
      expect(bare.isolationSwitchedOff).to.equal(true);
      expect(seen.host).to.equal(hostname());
      expect(seen.uid).to.be.within(bareRange.uid, bareRange.uid + 1);
    } finally {
      await bare.close();
    }
    // The sandboxed runner of this suite, made without the switch: its own host name.
    expect(runner.isolationSwitchedOff).to.equal(false);
    expect(output(await runner.runOperator(request('python', code))).host).to.equal('coderun');
  });

  it('given a service (runner) SIGKILLed while sandboxed runs are busy with detached children, when it is gone, then no process of their uids is left', async () => {
    // Another range than the runner above: only this service's processes can have these uids.
    const range = { uid: RANGE.uid + 100, gid: RANGE.gid + 100, count: 8 };
    const script = join(secretDir, 'killed-service.mts');
    const runnerModule = fileURLToPath(new URL('./ProcessCodeRunner.ts', import.meta.url));
    const js = "const { spawn } = require('child_process'); spawn('/bin/sleep', ['300'], { detached: true, stdio: 'ignore' }).unref(); exports.run = () => { for (;;) {} };";
    const py = 'import subprocess\nsubprocess.Popen(["/bin/sleep", "300"], start_new_session=True)\ndef run(c, p, x):\n    while True:\n        pass\n';
    writeFileSync(
      script,
      `import { ProcessCodeRunner } from ${JSON.stringify(runnerModule)};
const runner = new ProcessCodeRunner({ poolSize: 1, runAs: ${JSON.stringify(range)}, prewarm: [{ language: 'python', memoryMb: 128 }, { language: 'javascript', memoryMb: 128 }] });
const base = { connection: {}, payload: {}, context: {}, limits: { timeoutMs: 600_000, memoryMb: 128, maxOutputBytes: 65536 }, pollIntervalMs: 50, checkCompletionTimeoutMs: 1000, isCancelled: async () => false };
void runner.runOperator({ ...base, codeblock: { language: 'javascript', code: ${JSON.stringify(js)} } });
void runner.runOperator({ ...base, codeblock: { language: 'python', code: ${JSON.stringify(py)} } });
setInterval(() => {}, 1000);
`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: 'ignore' });
    // Busy: both runs and their detached sleeps exist (and the warm processes).
    const busy = await waitFor(() => processesOf(range).length >= 4, 30_000);
    expect(busy, `processes of the range: ${processesOf(range).length}`).to.equal(true);
    child.kill('SIGKILL');
    const gone = await waitFor(() => processesOf(range).length === 0, 15_000);
    expect(processesOf(range), 'still running').to.deep.equal([]);
    expect(gone).to.equal(true);
  });
});

/** Processes whose real uid is in the range (their /proc/<pid>/status), as "pid: comm". */
function processesOf(range: { uid: number; count: number }): string[] {
  const found: string[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
      if (uid >= range.uid && uid < range.uid + range.count) found.push(`${name}: ${/^Name:\s+(.*)$/m.exec(status)?.[1] ?? ''}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return condition();
}
