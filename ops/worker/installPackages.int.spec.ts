import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Language, OperatorOutcome, OperatorRunRequest } from '../../shared/ports/CodeRunner.ts';
import { ProcessCodeRunner } from './ProcessCodeRunner.ts';
import { sandboxLibraryBuilt } from './runSandbox.ts';

/**
 * The install step docs/writing-code.md shows, run as the service runs it as root: the bashblock
 * as the run's own uid, in its sandbox (tmpfs root, read-only /usr, its directory as HOME), then the
 * code importing what it installed. No internet here: the packages are a wheel and an npm tarball
 * the test builds, installed from a file path (carried in the bashblock) and from a package index on
 * loopback (this runner has no WORKER_NETWORK rule; the service's `restricted` refuses this host).
 */
const isRoot = process.getuid?.() === 0;
/** A range of our own, apart from the service's 64000-64999 and the other specs' (63000-63999). */
const RANGE = { uid: 62_800, gid: 62_800, count: 4 };

/** The commands the guide shows, exactly (the first test holds the guide to them). */
const PIP = 'python3 -m pip install --no-cache-dir --target .';
const NPM = 'npm install --no-save --no-audit --no-fund --no-update-notifier';

const WHEEL = 'tinypkg_clidocs-1.0-py3-none-any.whl';
const TARBALL = 'tinypkg-clidocs-1.0.0.tgz';

/** A pure-Python wheel of module `tinypkg_clidocs` (a zip with its dist-info), built by the host's python3. */
const buildWheel = (dir: string): Buffer => {
  const script = `
import base64, hashlib, sys, zipfile
files = {
    "tinypkg_clidocs/__init__.py": "def greet(who):\\n    return 'hello ' + who\\n",
    "tinypkg_clidocs-1.0.dist-info/METADATA": "Metadata-Version: 2.1\\nName: tinypkg-clidocs\\nVersion: 1.0\\n",
    "tinypkg_clidocs-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = []
for name, text in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
    record.append("%s,sha256=%s,%d" % (name, digest, len(text.encode())))
files["tinypkg_clidocs-1.0.dist-info/RECORD"] = "\\n".join(record + ["tinypkg_clidocs-1.0.dist-info/RECORD,,"]) + "\\n"
with zipfile.ZipFile(sys.argv[1], "w") as wheel:
    for name, text in files.items():
        wheel.writestr(name, text)
`;
  execFileSync('python3', ['-c', script, join(dir, WHEEL)]);
  return readFileSync(join(dir, WHEEL));
};

/** An npm package tarball (package/ inside, as `npm pack` makes it) exporting greet. */
const buildTarball = (dir: string): Buffer => {
  const source = join(dir, 'npm', 'package');
  mkdirSync(source, { recursive: true });
  writeFileSync(join(source, 'package.json'), JSON.stringify({ name: 'tinypkg-clidocs', version: '1.0.0', main: 'index.js' }));
  writeFileSync(join(source, 'index.js'), "exports.greet = (who) => 'hello ' + who;\n");
  execFileSync('tar', ['-czf', join(dir, TARBALL), '-C', join(dir, 'npm'), 'package']);
  return readFileSync(join(dir, TARBALL));
};

/** Bash that writes `bytes` to `name` in the run's directory: a file the install step can name by path. */
const carry = (name: string, bytes: Buffer): string => `base64 -d > ${name} <<'PACKAGE'\n${bytes.toString('base64').replace(/(.{76})/g, '$1\n')}\nPACKAGE\n`;

const request = (language: Language, code: string, install: string): OperatorRunRequest => ({
  codeblock: { language, code },
  bashblock: { code: `set -e\n${install}` },
  connection: {},
  payload: {},
  context: {},
  limits: { timeoutMs: 120_000, memoryMb: 512, maxOutputBytes: 64 * 1024 },
  pollIntervalMs: 50,
  checkCompletionTimeoutMs: 60_000,
  isCancelled: async () => false,
});

const output = (outcome: OperatorOutcome): Record<string, unknown> => {
  expect(outcome.status, JSON.stringify(outcome)).to.equal('success');
  return outcome.output;
};

describe('installing packages in the install step (docs/writing-code.md) as the sandboxed run', function () {
  this.timeout(240_000);
  let runner: ProcessCodeRunner;
  let dir: string;
  let wheel: Buffer;
  let tarball: Buffer;
  let index: Server;
  let indexUrl: string;

  it('given the guide, when its example install step is read, then it runs the commands tested here and never pip install --user', () => {
    const guide = readFileSync(new URL('../../docs/writing-code.md', import.meta.url), 'utf8');
    const examples = [...guide.matchAll(/```bash\n([\s\S]*?)```/g)].map((match) => match[1] ?? '').join('\n');
    expect(examples).to.include(PIP).and.include(NPM);
    expect(examples).not.to.match(/pip3? install --user/);
  });

  describe('as root, in the per-run sandbox', () => {
    before(async function () {
      if (!isRoot) {
        console.log('      (skipped: the per-run sandbox is for a service running as root)');
        return this.skip();
      }
      if (!sandboxLibraryBuilt()) {
        if (process.env.CI === 'true' || process.env.CI === '1') throw new Error('the run sandbox library is not built (npm ci builds it)');
        console.log('      (skipped: the run sandbox library is not built)');
        return this.skip();
      }
      dir = mkdtempSync(join(tmpdir(), 'install-packages-'));
      wheel = buildWheel(dir);
      tarball = buildTarball(dir);
      // A package index as pip's --find-links and npm read one: a page of links, and the files.
      index = createServer((req, res) => {
        const files: Record<string, Buffer> = { [`/${WHEEL}`]: wheel, [`/${TARBALL}`]: tarball };
        const file = files[req.url ?? ''];
        if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html' }).end(`<a href="${WHEEL}">${WHEEL}</a>\n<a href="${TARBALL}">${TARBALL}</a>\n`);
        else if (file) res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(file);
        else res.writeHead(404).end();
      });
      await new Promise<void>((resolve) => index.listen(0, '127.0.0.1', resolve));
      indexUrl = `http://127.0.0.1:${(index.address() as AddressInfo).port}/`;
      runner = new ProcessCodeRunner({ runAs: RANGE, poolSize: 0 });
    });

    after(async () => {
      await runner?.close();
      await new Promise((resolve) => (index ? index.close(resolve) : resolve(undefined)));
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const PYTHON_CODE = 'import tinypkg_clidocs\n\ndef run(connection, payload, context):\n    return {"greeting": tinypkg_clidocs.greet("python"), "at": tinypkg_clidocs.__file__}\n';

    it('given a wheel file in the run directory, when the install step runs pip install --target ., then the code imports it from the run directory', async () => {
      const seen = output(await runner.runOperator(request('python', PYTHON_CODE, `${carry(WHEEL, wheel)}${PIP} ./${WHEEL}\n`)));
      expect(seen.greeting).to.equal('hello python');
      // In the run's own directory (its tmpfs), not in a system or user site.
      expect(String(seen.at)).to.match(/\/coderun-[^/]+\/tinypkg_clidocs\/__init__\.py$/);
    });

    it('given a package index (as PyPI or a mirror), when the install step runs pip install --target . from it, then the code imports the downloaded package', async () => {
      const seen = output(await runner.runOperator(request('python', PYTHON_CODE, `${PIP} --no-index --find-links ${indexUrl} tinypkg-clidocs\n`)));
      expect(seen.greeting).to.equal('hello python');
    });

    it('given an npm tarball in the run directory, when the install step runs npm install --no-save, then CommonJS code requires it', async () => {
      const code = 'const tiny = require("tinypkg-clidocs");\nexports.run = () => ({ greeting: tiny.greet("javascript"), at: require.resolve("tinypkg-clidocs") });\n';
      const seen = output(await runner.runOperator(request('javascript', code, `${carry(TARBALL, tarball)}${NPM} ./${TARBALL}\n`)));
      expect(seen.greeting).to.equal('hello javascript');
      expect(String(seen.at)).to.match(/\/coderun-[^/]+\/node_modules\/tinypkg-clidocs\/index\.js$/);
    });

    it('given a package served over HTTP, when the install step runs npm install --no-save from its URL, then an ES module imports it', async () => {
      const code = 'import { greet } from "tinypkg-clidocs";\nexport function run() {\n  return { greeting: greet("esm") };\n}\n';
      const seen = output(await runner.runOperator(request('javascript', code, `${NPM} ${indexUrl}${TARBALL}\n`)));
      expect(seen.greeting).to.equal('hello esm');
    });
  });
});
