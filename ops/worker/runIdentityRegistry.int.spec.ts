import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { claimRunIdentities, startTime } from './runIdentityRegistry.ts';

const RANGE = { uid: 70_000, gid: 70_000, count: 100 };

/** An entry as another instance would have left it (name: pid-start-uid-gid-count). */
function plant(dir: string, pid: number, start: string, range: { uid: number; gid: number; count: number }): string {
  const name = `${pid}-${start}-${range.uid}-${range.gid}-${range.count}`;
  closeSync(openSync(join(dir, name), 'w', 0o600));
  return name;
}

describe('Run identity registry: one range per live instance on a host', () => {
  let root = '';
  let dir = '';

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'run-uid-registry-'));
    dir = join(root, 'run-uids');
  });

  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it('given a live claim, when an overlapping range is claimed, then it is refused naming the settings, a range beside it is accepted, and after the release the refused one is accepted', () => {
    const first = claimRunIdentities(RANGE, dir);
    expect(statSync(dir).mode & 0o777, 'the registry is private').to.equal(0o700);
    expect(() => claimRunIdentities({ uid: 70_050, gid: 80_000, count: 100 }, dir))
      .to.throw(/overlap those of another live service instance/)
      .with.property('message')
      .that.includes('WORKER_RUN_AS_UID')
      .and.includes('WORKER_RUN_AS_COUNT')
      .and.includes(`pid ${process.pid}`);
    expect(() => claimRunIdentities({ uid: 80_000, gid: 70_099, count: 1 }, dir), 'a gid of the range is as much a share').to.throw(/overlap/);
    expect(() => claimRunIdentities(RANGE, dir), 'the very same range again').to.throw(/overlap/);
    expect(readdirSync(dir), 'a refused claim leaves no entry').to.have.length(1);

    const beside = claimRunIdentities({ uid: 70_100, gid: 70_100, count: 100 }, dir);
    expect(readdirSync(dir)).to.have.length(2);

    first.release();
    const second = claimRunIdentities({ uid: 70_050, gid: 70_000, count: 50 }, dir);
    expect(readdirSync(dir).sort()).to.deep.equal([second.entry, beside.entry].map((path) => path.slice(dir.length + 1)).sort());
    second.release();
    beside.release();
    expect(readdirSync(dir)).to.deep.equal([]);
  });

  it('given a racing start that made its entry and has not checked yet, when an overlapping range is claimed, then it is refused (the entry comes first, the check after)', async () => {
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      await new Promise<void>((resolve) => other.once('spawn', resolve));
      const pid = other.pid!;
      claimRunIdentities(RANGE, dir, pid);
      expect(() => claimRunIdentities(RANGE, dir)).to.throw(new RegExp(`pid ${pid}:`));
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('given entries of a dead process and of a recycled pid (alive, another start time), when an overlapping range is claimed, then they are removed and the claim is accepted', async () => {
    mkdirSync(dir, { mode: 0o700 });
    const ended = spawn('true', { stdio: 'ignore' });
    const pid = await new Promise<number>((resolve) => ended.once('exit', () => resolve(ended.pid!)));
    plant(dir, pid, '12345', RANGE);
    const ownStart = startTime(process.pid);
    expect(ownStart).to.match(/^\d+$/);
    plant(dir, process.pid, String(Number(ownStart) + 1), RANGE);

    const claim = claimRunIdentities(RANGE, dir);
    expect(readdirSync(dir)).to.deep.equal([claim.entry.slice(dir.length + 1)]);
    claim.release();
  });

  it('given a registry directory of another user, when a range is claimed, then it is refused; an open one of its own is made 0700', function () {
    if (process.getuid?.() !== 0) this.skip();
    mkdirSync(dir, { mode: 0o777 });
    chmodSync(dir, 0o777);
    chownSync(dir, 65_534, 65_534);
    expect(() => claimRunIdentities(RANGE, dir)).to.throw(/must be a directory owned by uid 0/);
    chownSync(dir, 0, 0);
    claimRunIdentities(RANGE, dir).release();
    expect(statSync(dir).mode & 0o777).to.equal(0o700);
  });
});
