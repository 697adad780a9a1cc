import { expect } from 'chai';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RUN_PATH } from '../../ops/worker/systemPrograms.ts';
import { catalogClient, waitForItem, type CatalogClient } from '../support/catalogFixture.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';
import { startTestService, type TestService } from '../support/testService.ts';

/**
 * The attack, as found: the checkout under a world-writable directory, `npm start` putting
 * `<parent>/node_modules/.bin` first on the service's PATH, a run planting `chmod` there, and the
 * service (root) running it. Here every program the service, its runner, the install step or user
 * code might start by name is planted, in `node_modules/.bin` and `bin` of a 1777 directory at the
 * front of the service's PATH, as a script that records that it ran. None may run.
 */
const PLANTED = [
  'chmod', 'python3', 'python', 'bash', 'sh', 'dash', 'setpriv', 'nft', 'ip', 'iptables', 'bwrap', 'node', 'psql', 'mysql',
  'sqlite3', 'duckdb', 'git', 'openssl', 'java', 'mvn', 'true', 'env', 'id', 'cat', 'rm', 'mkdir', 'unshare', 'prlimit',
  'setsid', 'nohup', 'sleep', 'uname', 'ldconfig', 'tsx', 'npm', 'npx',
];

/**
 * Records what ran in a file of its own in `markers` (any uid can create one there); shell builtins
 * only (a program named here would be a planted one again).
 */
const plantedScript = (markers: string) => `#!/bin/sh\necho "$0 $*" > '${markers}'/ran.$$\nexit 97\n`;

/** The install step and the code both start programs by name: only RUN_PATH may answer. */
const INSTALL = 'command -v chmod > which.txt\nchmod 600 which.txt\ntrue';

const CODE = {
  python: `
import os, subprocess

def run(connection, payload, context):
    return None

def check_completion(connection, payload, context):
    spawned = subprocess.run(["sh", "-c", "command -v chmod"], capture_output=True, text=True).stdout.strip()
    with open("which.txt") as f:
        installed = f.read().strip()
    return {"status": "success", "path": os.environ.get("PATH"), "installed": installed, "spawned": spawned}
`,
  javascript: `
const fs = require('node:fs');
const { execFileSync } = require('node:child_process');

exports.run = () => null;
exports.check_completion = () => ({
  status: 'success',
  path: process.env.PATH,
  installed: fs.readFileSync('which.txt', 'utf8').trim(),
  spawned: execFileSync('sh', ['-c', 'command -v chmod'], { encoding: 'utf8' }).trim(),
});
`,
} as const;

type Task = Record<string, unknown> & { state: string; last_run_output: { path?: string; installed?: string; spawned?: string } };

describe('Programs are never looked up on the service PATH (planted node_modules/.bin)', function () {
  this.timeout(180_000);
  let planted: string;
  let markers: string;
  let savedPath: string | undefined;
  let svc: TestService | undefined;
  let admin: CatalogClient;
  let bed: TaskBed;

  before(async function () {
    if (process.getuid?.() !== 0) {
      console.log('    (skipped: the attack is on a service running as root; not root here)');
      this.skip();
    }
    // Given: a world-writable (1777) directory, as the parent of a checkout may be, with programs
    // of every name a run could plant in its node_modules/.bin and bin
    planted = mkdtempSync(join(tmpdir(), 'planted-'));
    chmodSync(planted, 0o1777);
    markers = join(planted, 'markers');
    mkdirSync(markers);
    chmodSync(markers, 0o777);
    const dirs = [join(planted, 'node_modules', '.bin'), join(planted, 'bin')];
    for (const dir of dirs) {
      mkdirSync(dir, { recursive: true });
      for (const name of PLANTED) writeFileSync(join(dir, name), plantedScript(markers), { mode: 0o755 });
    }
    // ... first on the PATH of the service (started in this process: its PATH is this process's)
    savedPath = process.env.PATH;
    process.env.PATH = [...dirs, savedPath ?? '/usr/bin:/bin'].join(':');
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
    bed = await taskBed(admin, 'planted-co', { name: 'target', content: {}, max_parallelism: 4 });
  });

  after(async () => {
    process.env.PATH = savedPath;
    await svc?.stop();
    if (planted) rmSync(planted, { recursive: true, force: true });
  });

  for (const language of ['python', 'javascript'] as const) {
    for (const reuse of [false, true]) {
      it(`given ${language} tasks with a bashblock and reuse_process ${reuse}, when run twice, then they succeed, see RUN_PATH, and nothing planted ever runs`, async () => {
        const operator = await admin.createOk({
          item_type: 'operator',
          name: `${language}-${reuse ? 'reuse' : 'fresh'}.operator`,
          parent_laui: bed.tree.folders.operator,
          codeblock: { language, code: CODE[language] },
          bashblock: { language: 'bash', content: INSTALL },
          reuse_process: reuse,
        });

        // When: the same task runs twice (with reuse, the second run is served by the same process)
        const outputs = [];
        for (const round of [1, 2]) {
          const reply = await svc!.client().post('/api/v1/task/run', { json: { item_type: 'task', ...bed.taskBody(`${language}-${reuse}-${round}`, operator) }, token: admin.token });
          expect(reply.status, reply.text).to.equal(200);
          const task = await waitForItem<Task>(admin, (reply.json as { item_laui: string }).item_laui, (item) => ['success', 'error', 'timeout', 'fail', 'cancelled'].includes(item.state), 60_000);
          // Then: no planted program ran (in the service, its runner, the install step or the code) ...
          const ran = readdirSync(markers).map((name) => readFileSync(join(markers, name), 'utf8').trim());
          expect(ran, 'planted programs that ran').to.deep.equal([]);
          expect(task.state, JSON.stringify(task.last_run_output)).to.equal('success');
          outputs.push(task.last_run_output);
        }
        // ... and the runs' PATH is the fixed one, their `chmod` a system one
        for (const output of outputs) {
          expect(output.path).to.equal(RUN_PATH);
          expect(output.path).not.to.include(planted);
          expect(output.installed).to.match(/^\/(usr\/)?(local\/)?bin\/chmod$/);
          expect(output.spawned).to.equal(output.installed);
        }
      });
    }
  }
});
