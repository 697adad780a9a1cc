import { readFileSync } from 'node:fs';

/** CPU time the whole machine spent so far (user, nice, system, irq, softirq), in ms; NaN off Linux. */
export const machineCpuMs = (): number => {
  try {
    const [user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.split(/\s+/).slice(1).map(Number) ?? [];
    return ((user ?? NaN) + (nice ?? NaN) + (system ?? NaN) + (irq ?? NaN) + (softirq ?? NaN)) * 10; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
};

/** The accounting fields of one /proc stat file (a process's, or a thread's under task/), in ms. */
export interface ProcStat {
  ppid: number;
  /** utime + stime. */
  ownMs: number;
  /** cutime + cstime: the children it reaped. */
  reapedMs: number;
}

/** A /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat file read; null when unreadable (gone, or off Linux). */
export const readProcStat = (path: string): ProcStat | null => {
  try {
    const stat = readFileSync(path, 'utf8');
    // Fields after the command name, which is parenthesized and may contain spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // USER_HZ is 100 on Linux.
    return { ppid: Number(fields[1]), ownMs: (Number(fields[11]) + Number(fields[12])) * 10, reapedMs: (Number(fields[13]) + Number(fields[14])) * 10 };
  } catch {
    return null;
  }
};
