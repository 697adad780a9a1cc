import { lstatSync, readlinkSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';

/**
 * Where the service looks for the programs it runs (bash, bwrap, setpriv, python3, ...): Debian's
 * PATH for root, /usr/local first so that an administrator's own build wins over the distribution's
 * (as on a shell). Never the service's own PATH: `npm start` puts `node_modules/.bin` of every parent
 * directory in front of it, and a run that could write one of those (a checkout under a
 * world-writable directory) had the service, as root, run its `chmod` (README, Security).
 */
export const SYSTEM_DIRS: ReadonlyArray<string> = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/** The directories of the PATH runs get (RUN_PATH): Debian's for an unprivileged user. */
export const RUN_DIRS: ReadonlyArray<string> = ['/usr/local/bin', '/usr/bin', '/bin'];

/** What the checks read of one path, without following a last symbolic link (lstat). */
export interface PathInfo {
  uid: number;
  mode: number;
  isSymbolicLink(): boolean;
  isDirectory(): boolean;
  isFile(): boolean;
}

/** The file system as the checks see it (tests: a fake tree). */
export interface FileSystemView {
  lstat(path: string): PathInfo;
  readlink(path: string): string;
}

const realFileSystem: FileSystemView = { lstat: (path) => lstatSync(path), readlink: (path) => readlinkSync(path) };

/** Symbolic links followed for one path at most (as the kernel's 40). */
const MAX_LINKS = 40;

/** A path, checked, and what lstat said of it. */
export interface CheckedPath {
  path: string;
  info: PathInfo;
}

/**
 * The real path (no symbolic link left in it) of `path` when every directory and file on the way,
 * and every link followed, cannot be changed by anyone but `owners`: each is owned by one of them
 * and is not group- or world-writable (a sticky 1777 directory is world-writable too); a link's
 * own mode means nothing, its owner and the directory it sits in do. Null when anything on the way
 * is missing or fails that. Walked component by component with lstat, each link resolved from the
 * real directory it sits in, so that a `..` in a link's target goes where the kernel would go.
 */
export function trustedRealPath(path: string, owners: ReadonlySet<number>, fs: FileSystemView = realFileSystem): CheckedPath | null {
  if (!isAbsolute(path)) return null;
  const safe = (info: PathInfo) => owners.has(info.uid) && (info.mode & 0o022) === 0;
  let links = MAX_LINKS;
  const walk = (parts: ReadonlyArray<string>, start: CheckedPath): CheckedPath | null => {
    // `current` is always a real, already checked path, and so is its parent (walked through).
    let current = start;
    for (const part of parts) {
      if (part === '' || part === '.') continue;
      if (part === '..') {
        const parent = dirname(current.path);
        current = { path: parent, info: fs.lstat(parent) };
        continue;
      }
      const next = join(current.path, part);
      const info = fs.lstat(next);
      if (info.isSymbolicLink()) {
        links -= 1;
        if (links < 0 || !owners.has(info.uid)) return null;
        const target = fs.readlink(next);
        const resolved = walk(target.split('/'), target.startsWith('/') ? top : current);
        if (resolved === null) return null;
        current = resolved;
        continue;
      }
      if (!safe(info)) return null;
      current = { path: next, info };
    }
    return current;
  };
  let top: CheckedPath;
  try {
    top = { path: '/', info: fs.lstat('/') };
    return safe(top.info) ? walk(path.split('/'), top) : null;
  } catch {
    return null;
  }
}

const ROOT_ONLY: ReadonlySet<number> = new Set([0]);

/** Whether `dir` is a directory that only root can change, it and every directory above it. */
export function trustedDirectory(dir: string, fs: FileSystemView = realFileSystem): boolean {
  return trustedRealPath(dir, ROOT_ONLY, fs)?.info.isDirectory() === true;
}

/** A program's name: one path component (never a path, which would bypass the directories). */
function checkName(name: string): void {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw new Error(`not a program name: ${JSON.stringify(name)}`);
  }
}

/**
 * `<dir>/<name>` for the first of `dirs` that is trusted (trustedDirectory) and holds `name` as an
 * executable regular file only root can change (through links, e.g. Debian's alternatives, all
 * checked the same way); null when none does. The path as found, not its link's target: a
 * multi-call binary (busybox) tells its applet by the name it was started as.
 */
export function findProgramIn(name: string, dirs: ReadonlyArray<string>, fs: FileSystemView = realFileSystem): string | null {
  checkName(name);
  for (const dir of dirs) {
    if (!trustedDirectory(dir, fs)) continue;
    const program = trustedRealPath(join(dir, name), ROOT_ONLY, fs);
    if (program?.info.isFile() && (program.info.mode & 0o111) !== 0) return join(dir, name);
  }
  return null;
}

const found = new Map<string, string | null>();

/** The absolute path of `name` in SYSTEM_DIRS (findProgramIn), looked up once and cached; null when missing. */
export function findSystemProgram(name: string): string | null {
  let path = found.get(name);
  if (path === undefined) {
    path = findProgramIn(name, SYSTEM_DIRS);
    found.set(name, path);
  }
  return path;
}

/** The absolute path of `name` in SYSTEM_DIRS, looked up once and cached; throws, naming it and the directories, when missing. */
export function systemProgram(name: string): string {
  const path = findSystemProgram(name);
  if (path === null) {
    throw new Error(
      `program "${name}" not found in ${SYSTEM_DIRS.join(', ')} (the service never looks programs up on its PATH; a directory counts only when it and its parents are owned by root and not group- or world-writable)`,
    );
  }
  return path;
}

/**
 * The PATH of everything runs start (the install step's bash, the runtimes, what user code spawns):
 * RUN_DIRS that only root can change, fixed at start; never the service's PATH. When none is
 * (a broken host, where the service finds no program either), a directory that does not exist:
 * an empty PATH would mean the working directory to execvp.
 */
export const RUN_PATH: string = RUN_DIRS.filter((dir) => trustedDirectory(dir)).join(':') || '/nonexistent';

/**
 * An interpreter configured by its path (WORKER_PYTHON): absolute, an executable regular file,
 * and, with every directory above it, owned by root or by the service's own user and writable by
 * no one else, so that no run can replace what the service (root) starts. Throws saying which.
 */
export function checkedProgramPath(path: string, setting: string, fs: FileSystemView = realFileSystem, serviceUid: number = process.getuid?.() ?? 0): string {
  if (!isAbsolute(path)) throw new Error(`${setting} must be an absolute path, got "${path}"`);
  const real = trustedRealPath(path, new Set([0, serviceUid]), fs);
  if (real === null) {
    throw new Error(
      `${setting}=${path}: missing, or it or a directory above it is not owned by root or the service's user, or is group- or world-writable (a run could replace it)`,
    );
  }
  if (!real.info.isFile() || (real.info.mode & 0o111) === 0) throw new Error(`${setting}=${path} is not an executable file`);
  return path;
}
