import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import type { Role } from '../../ops/config.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface RoleProcess {
  role: Role;
  pid: number;
  url: string;
  /** Everything the process printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the exit code or signal once the process has ended. */
  exited: Promise<string>;
  kill(signal: NodeJS.Signals): void;
}

/**
 * `npm start -- --role <role>` as its own OS process, with exactly the given environment besides
 * PATH and HOME; resolves once it printed `Ready: <url>`. From the sources through tsx (what the
 * specs change is what runs), or `compiled`: a bundle's main.js (ops/build/buildService.mjs), as
 * npm start runs it.
 */
export const startRole = (role: Role, env: Record<string, string>, timeoutMs = 240_000, compiled?: string): Promise<RoleProcess> => {
  const entry = compiled === undefined ? ['--import', 'tsx', join(REPO, 'ops', 'main.ts')] : [compiled];
  const child: ChildProcess = spawn(process.execPath, [...entry, '--role', role], {
    cwd: REPO,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? String(code))));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`role ${role} was not ready after ${timeoutMs} ms:\n${output.slice(-4000)}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const ready = /Ready: (http:\/\/\S+)/.exec(output);
      if (ready?.[1] && child.pid !== undefined) {
        clearTimeout(timer);
        resolve({ role, pid: child.pid, url: ready[1], output: () => output, exited, kill: (signal) => void child.kill(signal) });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then((how) => {
      clearTimeout(timer);
      reject(new Error(`role ${role} exited (${how}) before it was ready:\n${output.slice(-4000)}`));
    });
  });
};

/** SIGTERM, then SIGKILL if it has not ended after `graceMs`. */
export const stopRole = async (process: RoleProcess, graceMs = 20_000): Promise<void> => {
  process.kill('SIGTERM');
  const timer = setTimeout(() => process.kill('SIGKILL'), graceMs);
  await process.exited;
  clearTimeout(timer);
};
