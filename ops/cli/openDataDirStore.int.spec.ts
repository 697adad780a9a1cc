import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSqliteEventStore } from '../event-store/sqlite/SqliteEventStore.ts';

/**
 * The CLI run as an operator runs it (`npm run cli`), from another working directory, against a
 * DATA_DIR it cannot use: each refusal names the path and the setting and exits 1, and nothing is
 * made in the directory (no keys, no empty log a service would never read).
 */
const CLI = fileURLToPath(new URL('../cli.ts', import.meta.url));
const TSX = import.meta.resolve('tsx');
const isRoot = process.getuid?.() === 0;
/** An unprivileged uid for the unreadable case (nobody on Debian). */
const NOBODY = 65_534;

interface Ended {
  code: number;
  stdout: string;
  stderr: string;
}

const cli = (cwd: string, env: Record<string, string | undefined>, args: string[], as?: number): Promise<Ended> =>
  new Promise((resolve) => {
    const base = { ...process.env };
    delete base.DATA_DIR;
    const child = execFile(
      process.execPath,
      ['--import', TSX, CLI, ...args],
      { cwd, env: { ...base, ...env }, ...(as === undefined ? {} : { uid: as, gid: as }) },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? -1) : 0, stdout, stderr }),
    );
    child.stdin?.end();
  });

const COMMANDS: ReadonlyArray<string[]> = [
  ['events', 'export', '--out', 'x.jsonl'],
  ['events', 'tail'],
  ['user', 'create', '--username', 'u', '--email', 'u@example.com', '--password', 'password-123'],
  ['user', 'grant-auditor', '--username', 'u'],
];

describe('CLI: DATA_DIR it cannot use', function () {
  this.timeout(120_000);
  let root: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'cli-datadir-'));
    // Reachable by the unprivileged uid of the last case (mkdtemp makes it 0700).
    chmodSync(root, 0o755);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('given DATA_DIR unset and no ./data in the working directory, when any command runs, then it exits 1 naming DATA_DIR, its default and the path, and makes nothing', async () => {
    const cwd = join(root, 'elsewhere');
    mkdirSync(cwd);
    for (const args of COMMANDS) {
      const ended = await cli(cwd, {}, args);
      expect(ended.code, args.join(' ')).to.equal(1);
      expect(ended.stderr.trim()).to.equal(`error: DATA_DIR is not set: its default ./data is ${join(cwd, 'data')}, which does not exist: set DATA_DIR to the service's data directory`);
    }
    expect(readdirSync(cwd)).to.deep.equal([]);
  });

  it('given DATA_DIR a missing path or a file, when a command runs, then it exits 1 naming DATA_DIR and the path', async () => {
    const missing = join(root, 'missing');
    const file = join(root, 'a-file');
    writeFileSync(file, 'not a directory');
    const gone = await cli(root, { DATA_DIR: missing }, ['events', 'export', '--out', join(root, 'x.jsonl')]);
    expect(gone.code).to.equal(1);
    expect(gone.stderr.trim()).to.equal(`error: DATA_DIR=${missing}, which does not exist: set DATA_DIR to the service's data directory`);
    expect(existsSync(missing)).to.equal(false);
    const notDirectory = await cli(root, { DATA_DIR: file }, ['user', 'create', '--username', 'u', '--email', 'u@example.com', '--password', 'password-123']);
    expect(notDirectory.code).to.equal(1);
    expect(notDirectory.stderr.trim()).to.equal(`error: DATA_DIR=${file}, which is not a directory: set DATA_DIR to the service's data directory`);
  });

  it('given DATA_DIR a directory without the event log, when any command runs, then it exits 1 saying so and makes neither a log nor keys', async () => {
    const empty = join(root, 'empty');
    mkdirSync(empty);
    for (const args of COMMANDS) {
      const ended = await cli(root, { DATA_DIR: empty }, args);
      expect(ended.code, args.join(' ')).to.equal(1);
      expect(ended.stderr.trim()).to.equal(
        `error: DATA_DIR=${empty}, which holds no event log (events.sqlite): set DATA_DIR to the data directory of the service (it makes the log at its first start)`,
      );
    }
    expect(readdirSync(empty)).to.deep.equal([]);
  });

  it('given a DATA_DIR of the service (0700) and a user who may not enter it, when a command runs as that user, then it exits 1 naming DATA_DIR, the path and the uid', async function () {
    if (!isRoot) return this.skip();
    const data = join(root, 'data');
    mkdirSync(data, { mode: 0o700 });
    const store = openSqliteEventStore({ file: join(data, 'events.sqlite'), writer: 'main-thread' });
    await store.close();
    const ended = await cli(root, { DATA_DIR: data, HOME: root }, ['events', 'export', '--out', join(root, 'x.jsonl')], NOBODY);
    expect(ended.code, ended.stderr).to.equal(1);
    expect(ended.stderr.trim()).to.equal(`error: DATA_DIR=${data}, which this user (uid ${NOBODY}) cannot read and write (EACCES): run the CLI as the service's user`);
    // The same directory as its owner: the export runs.
    const owner = await cli(root, { DATA_DIR: data }, ['events', 'export', '--out', join(root, 'x.jsonl')]);
    expect(owner.code, owner.stderr).to.equal(0);
    expect(JSON.parse(owner.stdout)).to.deep.include({ format: 'jsonl', events: 0 });
  });
});
