import { readFileSync } from 'node:fs';

/**
 * Who runs a JavaScript action, as the action itself sees it: its process, parent, group, module
 * state, Math.random, arguments, environment, directory, ignored and blocked signals.
 */
export const NODE_IDENTITY = `
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
globalThis.runs = (globalThis.runs ?? 0) + 1;
export function run() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const status = readFileSync('/proc/self/status', 'utf8');
  return {
    pid: process.pid,
    realPid: Number(stat.slice(0, stat.indexOf(' '))),
    ppid: process.ppid,
    pgrp: Number(fields[2]),
    runs: globalThis.runs,
    random: [Math.random(), Math.random()],
    uuid: randomUUID(),
    execPath: process.execPath,
    argv: process.argv.slice(1),
    env: Object.keys(process.env).sort(),
    home: process.env.HOME,
    cwd: process.cwd(),
    signals: status.split('\\n').filter((line) => /^Sig(Ign|Blk):/.test(line)),
  };
}
`;
export interface NodeIdentity {
  pid: number;
  realPid: number;
  ppid: number;
  pgrp: number;
  runs: number;
  random: number[];
  uuid: string;
  execPath: string;
  argv: string[];
  env: string[];
  home: string;
  cwd: string;
  signals: string[];
}

/** A process that exists and is not a zombie (an orphan's zombie waits for init, not for us). */
export function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).charAt(0);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Exists at all, zombies included: after close() even those must be gone (reaped). */
export function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls `check` every 10 ms; whether it held before `timeoutMs` (generous: it ends a wait, it checks no speed). */
export async function until(check: () => boolean, timeoutMs = 60_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}
