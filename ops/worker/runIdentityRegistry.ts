import { chmodSync, closeSync, constants, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { RunAsRange } from './runIdentities.ts';

/** Where live service instances of this host note the identity ranges they hand out (WORKER_RUN_AS_REGISTRY). */
export const DEFAULT_RUN_IDENTITY_REGISTRY = '/run/pipeline-orchestrator/run-uids';

/** The range this process holds in the registry until release() (service close). */
export interface RunIdentityClaim {
  readonly entry: string;
  release(): void;
}

/** One entry's name: `<pid>-<start time>-<uid>-<gid>-<count>`, all of it in the name, which appears atomically. */
const ENTRY = /^(\d+)-(\d+)-(\d+)-(\d+)-(\d+)$/;

interface Entry {
  name: string;
  pid: number;
  start: string;
  range: RunAsRange;
}

/**
 * Claims `range` host-wide, so that two service instances on one host never hand out the same uid
 * or gid (RunIdentities keeps them apart within one instance only). `dir` (root's, 0700) holds one
 * entry per live claim; it is made if missing. The claim's entry is made first (O_EXCL), then the
 * others are read: of two racing claims of overlapping ranges, at least one sees the other and
 * gives up (both may; never neither). An entry whose pid is gone, or alive with another start
 * time (/proc/<pid>/stat: a recycled pid), is stale and removed. Throws, naming the settings,
 * when a live instance (this process included) holds an overlapping range.
 */
export function claimRunIdentities(range: RunAsRange, dir: string, pid: number = process.pid): RunIdentityClaim {
  secureRegistry(dir);
  const start = startTime(pid);
  if (start === null) throw new Error(`cannot read the start time of process ${pid} (/proc/${pid}/stat): the run identity registry ${dir} needs /proc`);
  const own = `${pid}-${start}-${range.uid}-${range.gid}-${range.count}`;
  const path = join(dir, own);
  try {
    closeSync(openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600));
  } catch (error) {
    // The same range twice in one process (two services in it): as much an overlap as any other.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw overlap(range, { name: own, pid, start, range }, dir);
    throw error;
  }
  let release = () => {
    release = () => {};
    try {
      unlinkSync(path);
    } catch {
      // already removed (the directory was cleared)
    }
  };
  for (const entry of readEntries(dir)) {
    if (entry.name === own || !overlaps(range, entry.range)) continue;
    if (startTime(entry.pid) !== entry.start) {
      removeStale(join(dir, entry.name));
      continue;
    }
    release();
    throw overlap(range, entry, dir);
  }
  return { entry: path, release: () => release() };
}

/** The registry directory: made 0700 if missing; refused unless it is a directory of this (root) user, then tightened to 0700. */
function secureRegistry(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  const uid = process.geteuid?.() ?? 0;
  if (!stat.isDirectory() || stat.uid !== uid) {
    throw new Error(`the run identity registry ${dir} (WORKER_RUN_AS_REGISTRY) must be a directory owned by uid ${uid}`);
  }
  if ((stat.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

function readEntries(dir: string): Entry[] {
  const entries: Entry[] = [];
  for (const name of readdirSync(dir)) {
    const match = ENTRY.exec(name);
    if (!match) continue;
    const [pid = '', start = '', uid = '', gid = '', count = ''] = match.slice(1);
    entries.push({ name, pid: Number(pid), start, range: { uid: Number(uid), gid: Number(gid), count: Number(count) } });
  }
  return entries;
}

/** Field 22 of /proc/<pid>/stat (clock ticks after boot): with the pid, one process for the host's uptime. Null when it is gone. */
export function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

function overlaps(a: RunAsRange, b: RunAsRange): boolean {
  const apart = (x: number, y: number): boolean => x + a.count <= y || y + b.count <= x;
  return !apart(a.uid, b.uid) || !apart(a.gid, b.gid);
}

function removeStale(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // another start removed it first
  }
}

function overlap(range: RunAsRange, holder: Entry, dir: string): Error {
  const span = (first: number, count: number) => `${first}-${first + count - 1}`;
  return new Error(
    `run identities uid ${span(range.uid, range.count)} / gid ${span(range.gid, range.count)} overlap those of another live service instance on this host ` +
      `(pid ${holder.pid}: uid ${span(holder.range.uid, holder.range.count)} / gid ${span(holder.range.gid, holder.range.count)}; registry ${dir}): ` +
      'its run processes and this one\'s would share uids and could reach each other. Give each instance on one host its own range: ' +
      'WORKER_RUN_AS_UID and WORKER_RUN_AS_GID (the first identity) and WORKER_RUN_AS_COUNT (how many) must not overlap another instance\'s.',
  );
}
