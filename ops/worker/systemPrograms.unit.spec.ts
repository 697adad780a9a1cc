import { expect } from 'chai';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scrubbedEnv } from './sandbox.ts';
import {
  checkedProgramPath,
  findProgramIn,
  RUN_DIRS,
  RUN_PATH,
  SYSTEM_DIRS,
  systemProgram,
  trustedDirectory,
  type FileSystemView,
  type PathInfo,
} from './systemPrograms.ts';

interface FakeEntry {
  kind: 'dir' | 'file' | 'link';
  mode: number;
  uid: number;
  target?: string;
}

const dir = (mode = 0o755, uid = 0): FakeEntry => ({ kind: 'dir', mode, uid });
const file = (mode = 0o755, uid = 0): FakeEntry => ({ kind: 'file', mode, uid });
const link = (target: string, uid = 0): FakeEntry => ({ kind: 'link', mode: 0o777, uid, target });

/** A file system of `entries` (absolute real paths): what lstat and readlink see. */
function fakeFs(entries: Record<string, FakeEntry>): FileSystemView {
  const entry = (path: string): FakeEntry => {
    const found = entries[path];
    if (!found) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    return found;
  };
  return {
    lstat: (path): PathInfo => {
      const { kind, mode, uid } = entry(path);
      return { uid, mode, isSymbolicLink: () => kind === 'link', isDirectory: () => kind === 'dir', isFile: () => kind === 'file' };
    },
    readlink: (path) => entry(path).target ?? '',
  };
}

/** A sane host: / and /usr and /usr/bin of root, 0755, with chmod in /usr/bin. */
const HOST: Record<string, FakeEntry> = { '/': dir(), '/usr': dir(), '/usr/bin': dir(), '/usr/bin/chmod': file() };

describe('systemPrograms: programs only from directories only root can change', () => {
  it('given chmod in a root-owned /usr/bin, when looked up, then its absolute path', () => {
    expect(findProgramIn('chmod', ['/usr/bin'], fakeFs(HOST))).to.equal('/usr/bin/chmod');
  });

  for (const [what, bad] of [
    ['a world-writable directory', dir(0o777)],
    ['a sticky world-writable (1777) directory', dir(0o1777)],
    ['a group-writable directory', dir(0o775)],
    ['a directory owned by another user', dir(0o755, 1000)],
  ] as const) {
    it(`given ${what} listed first holding a chmod, when looked up, then it is skipped for the trusted one`, () => {
      const fs = fakeFs({ ...HOST, '/opt': dir(), '/opt/bad': bad, '/opt/bad/chmod': file() });
      expect(trustedDirectory('/opt/bad', fs)).to.equal(false);
      expect(findProgramIn('chmod', ['/opt/bad', '/usr/bin'], fs)).to.equal('/usr/bin/chmod');
    });

    it(`given a root-owned directory under ${what}, when looked up, then it is skipped too (its parent could rename it)`, () => {
      const fs = fakeFs({ ...HOST, '/tmp': bad, '/tmp/it': dir(), '/tmp/it/bin': dir(), '/tmp/it/bin/chmod': file() });
      expect(trustedDirectory('/tmp/it/bin', fs)).to.equal(false);
      expect(findProgramIn('chmod', ['/tmp/it/bin'], fs)).to.equal(null);
    });
  }

  it('given a chmod that is world-writable, owned by another user or not executable, when looked up, then it is not used', () => {
    for (const bad of [file(0o777), file(0o755, 1000), file(0o644), dir()]) {
      expect(findProgramIn('chmod', ['/usr/bin'], fakeFs({ ...HOST, '/usr/bin/chmod': bad })), JSON.stringify(bad)).to.equal(null);
    }
  });

  it('given merged /usr (/bin -> usr/bin) and an alternatives link with a `..`, when looked up, then found under the name as listed', () => {
    const fs = fakeFs({
      ...HOST,
      '/bin': link('usr/bin'),
      '/usr/bin/awk': link('/etc/alternatives/awk'),
      '/etc': dir(),
      '/etc/alternatives': dir(),
      '/etc/alternatives/awk': link('../../usr/lib/mawk'),
      '/usr/lib': dir(),
      '/usr/lib/mawk': file(),
    });
    expect(findProgramIn('chmod', ['/bin'], fs)).to.equal('/bin/chmod');
    expect(findProgramIn('awk', ['/bin'], fs)).to.equal('/bin/awk');
  });

  it('given a link owned by another user, or one into a writable directory, when looked up, then it is not followed', () => {
    const writableTarget = fakeFs({ ...HOST, '/usr/bin/python3': link('/home/u/python3'), '/home': dir(), '/home/u': dir(0o755, 1000), '/home/u/python3': file(0o755, 0) });
    expect(findProgramIn('python3', ['/usr/bin'], writableTarget)).to.equal(null);
    const foreignLink = fakeFs({ ...HOST, '/bin': link('usr/bin', 1000) });
    expect(findProgramIn('chmod', ['/bin'], foreignLink)).to.equal(null);
    const loop = fakeFs({ ...HOST, '/usr/bin/loop': link('/usr/bin/loop') });
    expect(findProgramIn('loop', ['/usr/bin'], loop)).to.equal(null);
  });

  it('given a name with a slash or a dot-dot, when looked up, then refused', () => {
    for (const name of ['../chmod', 'bin/chmod', '/usr/bin/chmod', '..', '']) {
      expect(() => findProgramIn(name, ['/usr/bin'], fakeFs(HOST)), name).to.throw(/not a program name/);
    }
  });

  it('given a world-writable directory on this host holding an executable chmod, when looked up, then it is skipped', () => {
    const planted = mkdtempSync(join(tmpdir(), 'programs-'));
    try {
      chmodSync(planted, 0o777);
      writeFileSync(join(planted, 'chmod'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
      expect(trustedDirectory(planted)).to.equal(false);
      expect(findProgramIn('chmod', [planted])).to.equal(null);
    } finally {
      rmSync(planted, { recursive: true, force: true });
    }
  });

  it('given a missing program, when systemProgram asks for it, then the error names it and the directories', () => {
    expect(() => systemProgram('no-such-program-here')).to.throw(/"no-such-program-here" not found in \/usr\/local\/sbin, .*\/bin/);
  });

  it('given a service PATH led by node_modules/.bin, when a run gets its environment, then its PATH is RUN_PATH: system directories only root can change', () => {
    const saved = process.env.PATH;
    process.env.PATH = `/tmp/x/node_modules/.bin:/tmp/bin:${saved ?? ''}`;
    try {
      expect(scrubbedEnv('/tmp/run').PATH).to.equal(RUN_PATH);
    } finally {
      process.env.PATH = saved;
    }
    expect(RUN_PATH).not.to.include('node_modules');
    for (const entry of RUN_PATH.split(':')) {
      expect(RUN_DIRS, entry).to.include(entry);
      expect(SYSTEM_DIRS, entry).to.include(entry);
      expect(trustedDirectory(entry), entry).to.equal(true);
    }
  });

  it('given WORKER_PYTHON, when checked, then it must be absolute, executable, and changeable only by root or the service user', () => {
    const tree = { ...HOST, '/opt': dir(), '/opt/venv': dir(0o755, 1000), '/opt/venv/python3': file(0o755, 1000), '/opt/shared': dir(0o777), '/opt/shared/python3': file() };
    const fs = fakeFs(tree);
    expect(checkedProgramPath('/opt/venv/python3', 'WORKER_PYTHON', fs, 1000)).to.equal('/opt/venv/python3');
    expect(() => checkedProgramPath('/opt/venv/python3', 'WORKER_PYTHON', fs, 0)).to.throw(/WORKER_PYTHON=\/opt\/venv\/python3: .*not owned by root or the service's user/);
    expect(() => checkedProgramPath('/opt/shared/python3', 'WORKER_PYTHON', fs, 0)).to.throw(/group- or world-writable/);
    expect(() => checkedProgramPath('python3', 'WORKER_PYTHON', fs, 0)).to.throw(/absolute path/);
    expect(() => checkedProgramPath('/usr/bin', 'WORKER_PYTHON', fs, 0)).to.throw(/not an executable file/);
  });
});
