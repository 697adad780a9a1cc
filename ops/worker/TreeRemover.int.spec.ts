import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TreeRemover } from './TreeRemover.ts';

/** `files` empty files spread over directories of 1,000. */
const wideTree = (root: string, files: number): void => {
  for (let index = 0; index < files; index += 1) {
    const dir = join(root, `d${Math.floor(index / 1000)}`);
    if (index % 1000 === 0) mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `f${index}`), '');
  }
};

/** `depth` nested directories of 255-byte names (a path far beyond PATH_MAX), a file at the bottom. */
const deepTree = (root: string, depth: number): void => {
  const back = process.cwd();
  mkdirSync(root, { recursive: true });
  process.chdir(root);
  try {
    for (let level = 0; level < depth; level += 1) {
      const name = `${String(level).padStart(2, '0')}${'n'.repeat(253)}`;
      mkdirSync(name);
      // Relative: the absolute path is too long for any call that takes one.
      process.chdir(name);
    }
    writeFileSync('bottom.txt', 'deep');
  } finally {
    process.chdir(back);
  }
};

describe('TreeRemover (run directories removed off the event loop)', function () {
  this.timeout(180_000);
  let scratch = '';

  beforeEach(() => {
    scratch = mkdtempSync(join(tmpdir(), 'tree-remover-'));
  });
  afterEach(() => {
    // rm itself: a tree left by a failed test may be too deep for Node's removal.
    spawnSync('/bin/rm', ['-rf', '--', scratch]);
  });

  it('given a tree of 50,000 files holding links to an outside file and directory, when it is removed, then an rm process removed it while the event loop kept running callbacks, the tree is gone and the link targets are untouched', async () => {
    const outside = join(scratch, 'outside');
    mkdirSync(join(outside, 'dir'), { recursive: true });
    writeFileSync(join(outside, 'keep.txt'), 'keep me');
    writeFileSync(join(outside, 'dir', 'inner.txt'), 'keep me too');
    const tree = join(scratch, 'coderun-wide');
    wideTree(tree, 50_000);
    symlinkSync(join(outside, 'keep.txt'), join(tree, 'd0', 'link-to-file'));
    symlinkSync(join(outside, 'dir'), join(tree, 'd1', 'link-to-dir'));

    const spawned: Array<{ args: ReadonlyArray<string>; cmdline: string }> = [];
    const remover = new TreeRemover({
      // Read at once: the child has exec'd its program when spawn returns, and is not reaped before this callback ends.
      onSpawn: (pid, args) => spawned.push({ args, cmdline: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ') }),
    });
    let ticks = 0;
    let removing = true;
    const tick = (): void => {
      ticks += 1;
      if (removing) setImmediate(tick);
    };
    setImmediate(tick);
    await remover.remove(tree);
    removing = false;

    expect(existsSync(tree)).to.equal(false);
    expect(readFileSync(join(outside, 'keep.txt'), 'utf8')).to.equal('keep me');
    expect(readFileSync(join(outside, 'dir', 'inner.txt'), 'utf8')).to.equal('keep me too');
    // The removal was another process's work (rm, by its absolute path), not this thread's.
    expect(spawned.map((entry) => entry.args)).to.deep.include.members([[spawned[0]?.args[0], '-rf', '--', tree]]);
    expect(spawned[0]?.args[0]).to.match(/^\/.*\/rm$/);
    expect(spawned[0]?.cmdline).to.include(`-rf -- ${tree}`);
    // Loose: the event loop ran callbacks in between (no timing is asserted).
    expect(ticks).to.be.greaterThan(10);
    expect(remover.running()).to.deep.equal([]);
  });

  it('given a 40-level tree of 255-byte names (a path of ~10 KB, beyond PATH_MAX), when it is removed, then it is gone completely', async () => {
    const tree = join(scratch, 'coderun-deep');
    deepTree(tree, 40);
    writeFileSync(join(tree, 'top.txt'), 'top');
    await new TreeRemover().remove(tree);
    expect(existsSync(tree)).to.equal(false);
  });

  it('given a symbolic link in place of a run directory, when it is removed, then the link goes and the directory it points to stays', async () => {
    const target = join(scratch, 'service-data');
    mkdirSync(target);
    writeFileSync(join(target, 'secret'), 'x');
    const link = join(scratch, 'coderun-link');
    symlinkSync(target, link);
    await new TreeRemover().remove(link);
    expect(existsSync(link)).to.equal(false);
    expect(readFileSync(join(target, 'secret'), 'utf8')).to.equal('x');
  });

  it('given six trees removed at once with a concurrency of 2, when they are removed, then never more than 2 rm processes ran at once and every tree is gone', async () => {
    const trees = Array.from({ length: 6 }, (_, index) => join(scratch, `coderun-${index}`));
    for (const tree of trees) wideTree(tree, 2_000);
    let most = 0;
    const remover: TreeRemover = new TreeRemover({ concurrency: 2, onSpawn: () => (most = Math.max(most, remover.running().length)) });
    await Promise.all(trees.map((tree) => remover.remove(tree)));
    expect(most).to.be.within(1, 2);
    for (const tree of trees) expect(existsSync(tree), tree).to.equal(false);
  });

  it('given an empty directory or a missing path, when they are removed, then no process is started', async () => {
    const empty = join(scratch, 'coderun-empty');
    mkdirSync(empty);
    const spawned: number[] = [];
    const remover = new TreeRemover({ onSpawn: (pid) => spawned.push(pid) });
    await remover.remove(empty);
    await remover.remove(join(scratch, 'never-made'));
    expect(existsSync(empty)).to.equal(false);
    expect(spawned).to.deep.equal([]);
  });
});
