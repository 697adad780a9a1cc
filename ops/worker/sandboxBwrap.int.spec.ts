import { expect } from 'chai';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Language } from '../../shared/ports/CodeRunner.ts';
import { secureDataDir } from '../secureDataDir.ts';
import { bareOperatorRequest } from './operatorRequests.ts';
import { ProcessCodeRunner } from './ProcessCodeRunner.ts';
import { findSystemProgram, SYSTEM_DIRS } from './systemPrograms.ts';

/**
 * The bubblewrap path (issue 19, not root): a process of an unprivileged uid (the "service")
 * builds the runner as ops/service.ts does in WORKER_SANDBOX=auto and runs hostile code, which has
 * that same uid. Without the sandbox it could read DATA_DIR (its own uid's), the service's
 * /proc/<pid>/environ (which holds a secret here), the code tree and the service user's home, and
 * its detached children
 * would outlive it.
 */
const SCRIPT = fileURLToPath(new URL('./sandboxBwrap.script.ts', import.meta.url));
const SERVICE_SCRIPT = fileURLToPath(new URL('./sandboxBwrapService.script.ts', import.meta.url));
const WORKTREE = fileURLToPath(new URL('../../', import.meta.url));
// Outside the run identities of a root service (64000-64999 by default): a service started as root
// on this machine meanwhile (another spec) restricts the network of that range (WORKER_NETWORK).
const UID = 63_999;
const SECRET = `bwrap-spec-secret-${process.pid}-${Date.now()}`;

const HOSTILE: Record<Language, string> = {
  python: `
import os, subprocess, time

def attempt(path):
    try:
        with open(path, "rb") as f:
            return [path, f.read(300).decode("latin1")]
    except OSError:
        return None

def run(connection, payload, context):
    data_dir, tag, repo, home = context["dataDir"], context["tag"], context["repo"], context["home"]
    candidates = [os.path.join(data_dir, "keys", "jwt-private.pem"), os.path.join(data_dir, "events.sqlite")]
    for root, dirs, files in os.walk(data_dir):
        candidates += [os.path.join(root, name) for name in files]
    read = [entry for entry in map(attempt, candidates) if entry]
    code = [entry for entry in map(attempt, [os.path.join(repo, "package.json"), os.path.join(repo, "ops", "service.ts"), os.path.join(repo, "ops", "config.ts"), os.path.join(home, ".netrc")]) if entry]
    pids = [name for name in os.listdir("/proc") if name.isdigit()]
    environs = [entry for entry in (attempt("/proc/%s/environ" % pid) for pid in pids) if entry]
    subprocess.Popen(["sleep", tag], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.Popen(["sh", "-c", "setsid sleep %s >/dev/null 2>&1 &" % tag]).wait()
    time.sleep(1.5)
    return {"read": read, "code": code, "environs": environs, "pids": len(pids), "uid": os.getuid()}
`,
  javascript: `
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');

const attempt = (file) => {
  try { return [file, fs.readFileSync(file, 'latin1').slice(0, 300)]; } catch { return null; }
};

exports.run = async (connection, payload, context) => {
  const { dataDir, tag, repo, home } = context;
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
  const read = candidates.map(attempt).filter(Boolean);
  const code = [path.join(repo, 'package.json'), path.join(repo, 'ops', 'service.ts'), path.join(repo, 'ops', 'config.ts'), path.join(home, '.netrc')].map(attempt).filter(Boolean);
  const pids = fs.readdirSync('/proc').filter((name) => /^\\d+$/.test(name));
  const environs = pids.map((pid) => attempt('/proc/' + pid + '/environ')).filter(Boolean);
  spawn('sleep', [tag], { detached: true, stdio: 'ignore' }).unref();
  spawnSync('sh', ['-c', 'setsid sleep ' + tag + ' >/dev/null 2>&1 &']);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  return { read, code, environs, pids: pids.length, uid: process.getuid() };
};
`,
};

/** An install step that tries the same and leaves a detached job. */
const INSTALL = `
cat "$DATA"/keys/* "$DATA"/events.sqlite 2>/dev/null
cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep BWRAP_SPEC_SECRET
cat "$REPO"/package.json 2>/dev/null | head -3
setsid sleep "$TAG" </dev/null >/dev/null 2>&1 &
true
`;

interface Seen {
  read: Array<[string, string]>;
  code: Array<[string, string]>;
  environs: Array<[string, string]>;
  pids: number;
  uid: number;
}

interface Report {
  decision: { kind: string };
  uid: number;
  pid: number;
  results: Array<{ tag: string; outcome: { status: string; output?: unknown; logs?: string }; leftBehind: number[]; startedDuring: number[] }>;
}

/** The runners' private runs roots of UID in the temp directory. */
function runsRoots(): string[] {
  return readdirSync(tmpdir()).filter((name) => name.startsWith('coderuns-') && statSync(join(tmpdir(), name)).uid === UID);
}

/** Live (not zombie) processes of `uid`, with their command lines. */
function processesOf(uid: number): string[] {
  const found: string[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The Uid line, not the owner of /proc/<pid>: that is root for a non-dumpable process.
      if (!new RegExp(`^Uid:\\s+${uid}\\s`, 'm').test(readFileSync(`/proc/${name}/status`, 'latin1'))) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z') continue;
      found.push(`${name}: ${readFileSync(`/proc/${name}/cmdline`, 'latin1').replace(/\0/g, ' ')}`);
    } catch {
      // gone
    }
  }
  return found;
}

function bwrapInstalled(): boolean {
  try {
    execFileSync('bwrap', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * The command that runs `command` as UID in a mount namespace of its own in which every bwrap of the
 * system directories is /dev/null (no program): the host's bubblewrap stays as it is for everyone
 * else. Null when this process cannot make mount namespaces (not root, or a container without
 * CAP_SYS_ADMIN).
 */
function withoutBwrap(command: string[]): string[] | null {
  const [unshare, mount, setpriv] = [findSystemProgram('unshare'), findSystemProgram('mount'), findSystemProgram('setpriv')];
  if (!unshare || !mount || !setpriv || spawnSync(unshare, ['--mount', '--', mount, '--make-rprivate', '/']).status !== 0) return null;
  const hidden = [...new Set(SYSTEM_DIRS.map((dir) => join(dir, 'bwrap')).filter((path) => existsSync(path)).map((path) => realpathSync(path)))];
  const mounts = hidden.map((path) => `${mount} --bind /dev/null ${path}`).join(' && ');
  return [unshare, '--mount', '--propagation', 'private', '--', '/bin/sh', '-c', `${mounts || 'true'} && exec "$0" "$@"`, setpriv, `--reuid=${UID}`, `--regid=${UID}`, '--clear-groups', '--', ...command];
}

/** Runs a script as UID (through `wrap` when given: it drops to UID itself); its exit code, stdout and stderr. */
async function runAs(script: string, scratch: string, env: Record<string, string>, wrap?: (command: string[]) => string[]): Promise<{ code: number | null; out: string; err: string }> {
  const command = [process.execPath, '--import', 'tsx', script];
  const [file, ...args] = wrap ? wrap(command) : command;
  const child = spawn(file ?? process.execPath, args, {
    ...(wrap ? {} : { uid: UID, gid: UID }),
    cwd: WORKTREE,
    env: {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: join(scratch, 'home'),
      TMPDIR: '/tmp',
      BWRAP_SPEC_SECRET: SECRET,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, out, err };
}

/** The last JSON line a script printed (it may log before it). */
function lastJson<T>(run: { code: number | null; out: string; err: string }): T {
  const line = run.out.trim().split('\n').filter((text) => text.startsWith('{"')).pop() ?? '';
  if (run.code !== 0 || !line) throw new Error(`the unprivileged script failed (exit ${run.code}): ${run.err.slice(-2000)} ${run.out.slice(-500)}`);
  if (process.env.BWRAP_SPEC_DEBUG) console.log(line.slice(0, 6000));
  return JSON.parse(line) as T;
}

/** Runs the runner-level script as UID (WORKER_NETWORK in `env`); its report. */
async function asUnprivileged(
  scratch: string,
  dataDir: string,
  runs: Array<{ language: Language; code: string; bashblock?: string; tag: string; timeoutMs?: number }>,
  env: Record<string, string> = {},
): Promise<Report> {
  return lastJson<Report>(
    await runAs(SCRIPT, scratch, {
      ...env,
      BWRAP_SPEC_DATA_DIR: dataDir,
      BWRAP_SPEC_RUNS: JSON.stringify(runs),
      ...(process.env.BWRAP_SPEC_DEBUG ? { BWRAP_SPEC_DEBUG: process.env.BWRAP_SPEC_DEBUG } : {}),
    }),
  );
}

describe('Sandbox (not root): bubblewrap', function () {
  this.timeout(180_000);
  let scratch: string;
  let dataDir: string;

  before(function () {
    if (process.getuid?.() !== 0) {
      console.log('    (skipped: the spec starts the service side as another uid, which needs root)');
      this.skip();
    }
    if (!bwrapInstalled()) {
      console.log('    (skipped: bubblewrap is not installed: apt-get install -y bubblewrap)');
      this.skip();
    }
    scratch = mkdtempSync(join(tmpdir(), 'bwrap-spec-'));
    dataDir = join(scratch, 'data');
    mkdirSync(join(dataDir, 'keys'), { recursive: true });
    mkdirSync(join(scratch, 'home'));
    // The service user's own files outside DATA_DIR (its home is hidden too).
    writeFileSync(join(scratch, 'home', '.netrc'), 'machine db.example login service password secret\n');
    writeFileSync(join(dataDir, 'keys', 'jwt-private.pem'), '-----BEGIN PRIVATE KEY-----\nsecret\n');
    writeFileSync(join(dataDir, 'events.sqlite'), 'SQLite format 3\0secret events');
    secureDataDir(dataDir);
    // Everything belongs to the service's uid, which the runs have too.
    execFileSync('chown', ['-R', `${UID}:${UID}`, scratch]);
    chownSync(scratch, UID, UID);
  });

  after(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('given a service not running as root, when hostile Python and JavaScript code and an install step run, then nothing of DATA_DIR, the code tree or another process\'s environment is read, and their detached processes end with the run', async () => {
    const tag = (n: number) => String(3_000 + (process.pid % 1000) * 10 + n);
    const before = runsRoots();
    const report = await asUnprivileged(scratch, dataDir, [
      { language: 'python', code: HOSTILE.python, tag: tag(1) },
      { language: 'javascript', code: HOSTILE.javascript, tag: tag(2) },
      {
        language: 'python',
        code: 'def run(c, p, x):\n    return {}\n',
        bashblock: `DATA=${dataDir} REPO=${WORKTREE} TAG=${tag(3)}\n${INSTALL}`,
        tag: tag(3),
      },
    ]);
    expect(report.uid).to.equal(UID);
    expect(report.decision.kind).to.equal('bwrap');
    expect(report.results).to.have.length(3);
    const [python, javascript, install] = report.results as [Report['results'][number], Report['results'][number], Report['results'][number]];
    for (const result of [python, javascript]) {
      expect(result.outcome.status, JSON.stringify(result.outcome)).to.equal('success');
      const seen = result.outcome.output as Seen;
      expect(seen.uid).to.equal(UID);
      expect(seen.read, 'DATA_DIR').to.deep.equal([]);
      expect(seen.code, 'the code tree and the service user\'s home').to.deep.equal([]);
      for (const [path, text] of seen.environs) expect(text, path).not.to.include(SECRET);
      // Only bubblewrap's init (pid 1, the scrubbed environment it was started with): the fork server
      // and the other runs of the sandbox, all of the same uid, are non-dumpable.
      expect(seen.environs.map(([path]) => path)).to.deep.equal(['/proc/1/environ']);
      // Its own pid namespace: bubblewrap's init, the fork server, itself (and what it started).
      expect(seen.pids).to.be.below(10);
      // The detached processes were alive during the run (seen from the service), and are gone after it.
      expect(result.startedDuring.length, `${result.tag} started`).to.be.at.least(1);
      expect(result.leftBehind, `${result.tag} left behind`).to.deep.equal([]);
    }
    expect(install.outcome.status, JSON.stringify(install.outcome)).to.equal('success');
    expect(install.outcome.logs ?? '').not.to.include('secret').and.not.to.include(SECRET).and.not.to.include('"name"');
    expect(install.leftBehind).to.deep.equal([]);
    // Nothing is left in the temp directory by the runner (its private runs root).
    expect(runsRoots().filter((name) => !before.includes(name))).to.deep.equal([]);
  });

  it('given runs in the sandbox that loop forever or grow beyond their memory, when they run, then the runner reaches their real pids: the time limit kills the loop (and its child) and the watchdog the allocation', async () => {
    const tag = String(5_000 + (process.pid % 1000) * 4);
    const report = await asUnprivileged(scratch, dataDir, [
      {
        language: 'python',
        // Its child stays in its process group: killed with it by the time limit's group kill (the
        // runner's pid for it must be the real one), not left to the orphan sweep.
        code: `import subprocess\nsubprocess.Popen(["sleep", "${tag}"])\ndef run(c, p, x):\n    while True:\n        pass\n`,
        tag,
        timeoutMs: 3000,
      },
      {
        language: 'javascript',
        // Outside the V8 heap (no heap limit): only the RSS watchdog, which reads /proc/<pid>/statm, stops it.
        code: 'exports.run = () => { const kept = []; for (let i = 0; i < 64; i++) kept.push(Buffer.alloc(16 * 1024 * 1024, 1)); return kept.length; };',
        tag: `${tag}1`,
      },
    ]);
    const [loop, hog] = report.results as [Report['results'][number], Report['results'][number]];
    expect(JSON.stringify(loop.outcome)).to.include('time limit');
    expect(loop.startedDuring.length).to.equal(1);
    expect(loop.leftBehind).to.deep.equal([]);
    expect(hog.outcome.status, JSON.stringify(hog.outcome)).not.to.equal('success');
    expect(JSON.stringify(hog.outcome)).to.include('memory');
  });

  it('given a service killed with SIGKILL while a sandboxed run is busy with detached children, when it is gone, then no process of its uid is left (the sandboxes die with it)', async () => {
    const tag = String(7_000 + (process.pid % 1000) * 2);
    const before = runsRoots();
    const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
      uid: UID,
      gid: UID,
      cwd: WORKTREE,
      env: {
        PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
        // A system account's HOME that does not exist (Debian's nobody): nothing to hide there.
        HOME: '/nonexistent',
        TMPDIR: '/tmp',
        BWRAP_SPEC_DATA_DIR: dataDir,
        BWRAP_SPEC_HANG: '1',
        BWRAP_SPEC_RUNS: JSON.stringify([
          {
            language: 'python',
            code: `import subprocess\ndef run(c, p, x):\n    subprocess.Popen(["sleep", "${tag}"], start_new_session=True)\n    subprocess.Popen(["sleep", "${tag}"])\n    while True:\n        pass\n`,
            tag,
          },
        ]),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const running = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 90_000);
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('"running"')) {
          clearTimeout(timer);
          resolve(true);
        }
      });
      child.once('exit', () => resolve(false));
    });
    if (!running) child.kill('SIGKILL');
    expect(running, `the run did not start: ${err.slice(-1500)}`).to.equal(true);
    expect(processesOf(UID).length).to.be.at.least(4);
    child.kill('SIGKILL');
    const deadline = Date.now() + 20_000;
    while (processesOf(UID).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(processesOf(UID)).to.deep.equal([]);
    // Its runs root stays (nobody is left to remove it: README, Security); not this spec's business.
    for (const name of runsRoots().filter((root) => !before.includes(root))) rmSync(join(tmpdir(), name), { recursive: true, force: true });
  });

  it('given the service not running as root (WORKER_SANDBOX=auto), when an action reads the signing key and the service\'s environment and signs an admin token, then nothing is read and the token is refused (issue 19\'s forge path)', async () => {
    const serviceData = join(scratch, 'service-data');
    mkdirSync(serviceData);
    chownSync(serviceData, UID, UID);
    const seen = lastJson<{ status: number; result?: { key: unknown; events: unknown; environ: unknown; environs: string }; forgedStatus: number | null; announced: string[] }>(
      // No network for the runs (the restriction of the default needs root: see the next spec).
      await runAs(SERVICE_SCRIPT, scratch, { BWRAP_SPEC_DATA_DIR: serviceData, WORKER_SANDBOX: 'auto', WORKER_NETWORK: 'none' }),
    );
    expect(seen.status, JSON.stringify(seen)).to.equal(200);
    expect(seen.result?.key).to.equal(null);
    expect(seen.result?.events).to.equal(null);
    expect(seen.result?.environ).to.equal(null);
    expect(seen.result?.environs).not.to.include(SECRET);
    expect(seen.forgedStatus).to.equal(401);
    // No warning: a sandbox is in place.
    expect(seen.announced.join('\n')).not.to.include('WARNING');
  });

  it('given the service not running as root and WORKER_NETWORK left at restricted, when an action runs, then it is refused, the start warned naming the ways out', async () => {
    const serviceData = join(scratch, 'service-data-restricted');
    mkdirSync(serviceData);
    chownSync(serviceData, UID, UID);
    const seen = lastJson<{ status: number; result?: unknown; announced: string[] }>(await runAs(SERVICE_SCRIPT, scratch, { BWRAP_SPEC_DATA_DIR: serviceData, WORKER_SANDBOX: 'auto' }));
    expect(seen.result, JSON.stringify(seen)).to.equal(undefined);
    expect(seen.status).not.to.equal(200);
    expect(seen.announced.join('\n')).to.include('WARNING: code runs are disabled: WORKER_NETWORK=restricted cannot be enforced in the bubblewrap sandbox').and.include('WORKER_NETWORK=none');
  });

  it('given WORKER_NETWORK=none, when sandboxed code connects to a listener of this host, then it cannot (a network namespace of its own); with host it can', async () => {
    // Given: a listener on this host's loopback, which the sandboxes share unless the network is unshared
    const listener = createServer((socket) => socket.end('hello\n'));
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const { port } = listener.address() as AddressInfo;
    const code = `import socket\ndef run(c, p, x):\n    try:\n        with socket.create_connection(("127.0.0.1", ${port}), timeout=10) as s:\n            return {"got": s.recv(16).decode()}\n    except OSError as error:\n        return {"error": type(error).__name__}\n`;
    try {
      // When: the same code runs with WORKER_NETWORK=none, then with host
      const none = await asUnprivileged(scratch, dataDir, [{ language: 'python', code, tag: '1' }], { WORKER_NETWORK: 'none' });
      const host = await asUnprivileged(scratch, dataDir, [{ language: 'python', code, tag: '2' }], { WORKER_NETWORK: 'host' });
      // Then: refused in its own namespace (its loopback has no listener); reached on the host's
      expect(none.results[0]?.outcome.output, JSON.stringify(none.results[0]?.outcome)).to.deep.equal({ error: 'ConnectionRefusedError' });
      expect(host.results[0]?.outcome.output, JSON.stringify(host.results[0]?.outcome)).to.deep.equal({ got: 'hello\n' });
    } finally {
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    }
  });

  it('given WORKER_SANDBOX=bwrap and no bubblewrap in the system directories, when the service starts, then it refuses to start, saying why', async function () {
    // Not on PATH is not enough (bwrap is never looked up there: README, Security): hidden in a
    // mount namespace of the service's own.
    const wrapped = withoutBwrap(['probe']);
    if (wrapped === null) {
      console.log('    (skipped: no mount namespace can be made here to hide bwrap)');
      this.skip();
    }
    const serviceData = join(scratch, 'service-data-refused');
    mkdirSync(serviceData);
    chownSync(serviceData, UID, UID);
    const run = await runAs(SERVICE_SCRIPT, scratch, { BWRAP_SPEC_DATA_DIR: serviceData, WORKER_SANDBOX: 'bwrap' }, (command) => withoutBwrap(command) ?? command);
    expect(run.code).to.not.equal(0);
    expect(run.err).to.include('bubblewrap is not usable');
  });
});

describe('Sandbox (not root): bubblewrap refuses what it cannot wrap', () => {
  it('given the bubblewrap sandbox without fork servers, when runs come, then each is an error naming the missing fork server and no runtime is spawned by the service', async () => {
    const runner = new ProcessCodeRunner({ poolSize: 0, bwrap: { hidden: [] }, pythonForkServer: false, nodeForkServer: false });
    try {
      for (const language of ['python', 'javascript'] as const) {
        const outcome = await runner.runOperator(bareOperatorRequest({ language, code: language === 'python' ? 'def run(c, p, x):\n    return {}\n' : 'exports.run = () => ({});' }));
        expect(outcome.status, language).to.equal('error');
        expect('message' in outcome ? outcome.message : '', language).to.include('fork server in the bubblewrap sandbox');
      }
      expect(runner.processIds()).to.deep.equal([]);
    } finally {
      await runner.close();
    }
  });
});
