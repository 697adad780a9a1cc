import { spawn } from 'node:child_process';
import { lstat, rm, rmdir, unlink } from 'node:fs/promises';
import { findSystemProgram } from './systemPrograms.ts';

/** Removals run at once (each one `rm` process): the machine's disk and cores are shared with the runs. */
export const DEFAULT_REMOVAL_CONCURRENCY = 2;
/** What is kept of a removal program's stderr for the error that names it. */
const STDERR_BYTES = 4096;

export interface TreeRemoverOptions {
  /** Removal processes running at once; more removals wait their turn. Default 2. */
  concurrency?: number;
  /** Absolute paths of `rm` and `chmod` (default: the system's, never looked up on PATH); null: none here. */
  rm?: string | null;
  chmod?: string | null;
  /** Told of each removal process as it starts (tests, diagnostics). */
  onSpawn?(pid: number, args: ReadonlyArray<string>): void;
}

interface Exit {
  code: number | null;
  stderr: string;
}

/**
 * Removes directory trees that runs left (a run's working directory may hold hundreds of thousands
 * of files, or a tree deeper than PATH_MAX), never on the service's event loop and always
 * completely:
 * - an empty directory (what a run usually leaves: it clears its own files) is one rmdir, in the
 *   service, as before; a path that is not a directory (a symbolic link a run put in its place) is
 *   unlinked, never followed;
 * - anything else goes to a child process, GNU `rm -rf` by its absolute system path: it walks the
 *   tree with openat-style relative descents (no ENAMETOOLONG however deep the tree) and removes
 *   symbolic links without following them. Node's own recursive removal walked full paths, so a
 *   40-level tree of long names failed half way, and its ~2 callbacks per entry ran on the event
 *   loop (200,000 files held /healthz for 5.9 s);
 * - a tree that rm could not empty (directories the run made read-only, when the service is not
 *   root) gets `chmod -R u+rwx` (which ignores the links it meets) and a second rm;
 * - at most `concurrency` removal processes at once, the others wait in line.
 * Without `rm` on the host (never seen on Linux) the in-process removal is used.
 */
export class TreeRemover {
  private readonly concurrency: number;
  private readonly rm: string | null;
  private readonly chmod: string | null;
  private readonly waiting: Array<() => void> = [];
  private readonly pids = new Set<number>();
  private active = 0;

  constructor(private readonly options: TreeRemoverOptions = {}) {
    this.concurrency = Math.max(1, options.concurrency ?? DEFAULT_REMOVAL_CONCURRENCY);
    this.rm = options.rm === undefined ? findSystemProgram('rm') : options.rm;
    this.chmod = options.chmod === undefined ? findSystemProgram('chmod') : options.chmod;
  }

  /** Process ids of the removal processes running now. */
  running(): number[] {
    return [...this.pids];
  }

  /** Resolves once `path` is gone (or was never there); rejects naming the path when it could not be removed. */
  async remove(path: string): Promise<void> {
    let info;
    try {
      info = await lstat(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    if (!info.isDirectory()) {
      await unlink(path).catch(ignoreMissing);
      return;
    }
    try {
      await rmdir(path);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
    }
    await this.turn(async () => {
      if (this.rm === null) {
        await rm(path, { recursive: true, force: true, maxRetries: 2 });
        return;
      }
      let exit = await this.run(this.rm, ['-rf', '--', path]);
      if (exit.code !== 0 && (await exists(path)) && this.chmod !== null) {
        await this.run(this.chmod, ['-R', 'u+rwx', '--', path]);
        exit = await this.run(this.rm, ['-rf', '--', path]);
      }
      if (await exists(path)) throw new Error(`could not remove ${path}: ${exit.stderr.trim() || `rm exited with ${String(exit.code)}`}`);
    });
  }

  /** Runs `work` in one of the `concurrency` slots (in arrival order). */
  private async turn(work: () => Promise<void>): Promise<void> {
    if (this.active >= this.concurrency) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active += 1;
    try {
      await work();
    } finally {
      // The slot passes straight to the next in line (active stays counted), or is freed.
      const next = this.waiting.shift();
      if (next) next();
      else this.active -= 1;
    }
  }

  private run(program: string, args: string[]): Promise<Exit> {
    return new Promise((resolve) => {
      // No environment: rm and chmod need none (and get no locale that could change their messages).
      // A session of its own: a Ctrl-C at the service's terminal (SIGINT to its process group) does
      // not stop a removal half way, and one the service does not live to see still completes.
      const child = spawn(program, args, { stdio: ['ignore', 'ignore', 'pipe'], env: {}, detached: true });
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        if (stderr.length < STDERR_BYTES) stderr += chunk.toString('utf8').slice(0, STDERR_BYTES - stderr.length);
      });
      const pid = child.pid;
      if (pid !== undefined) {
        this.pids.add(pid);
        this.options.onSpawn?.(pid, [program, ...args]);
      }
      child.once('error', (error) => {
        if (pid !== undefined) this.pids.delete(pid);
        resolve({ code: null, stderr: error.message });
      });
      child.once('close', (code) => {
        if (pid !== undefined) this.pids.delete(pid);
        resolve({ code, stderr });
      });
    });
  }
}

const ignoreMissing = (error: unknown): void => {
  if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
};

const exists = async (path: string): Promise<boolean> =>
  lstat(path).then(
    () => true,
    () => false,
  );
