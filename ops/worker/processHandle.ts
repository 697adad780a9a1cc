import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { Socket } from 'node:net';
import { killGroup, scrubbedEnv, type RunAs } from './sandbox.ts';

/** How long an ended process's last output may take to arrive (it tells a heap-limit crash from an exit). */
export const OUTPUT_DRAIN_MS = 200;

/**
 * What one OS process reports to its RuntimeProcess. Never called synchronously from the call
 * that starts the process; after `exit` or `failed`, nothing more is reported.
 */
export interface ProcessEvents {
  /** Bytes of the JSON-lines protocol channel. */
  data(chunk: Buffer): void;
  /**
   * stdout/stderr bytes of the process, and which of the two (a forked process whose fork server
   * cannot keep them apart reports both as stdout).
   */
  output(chunk: Buffer, stream: 'stdout' | 'stderr'): void;
  /**
   * The process ended; its last output was delivered (or OUTPUT_DRAIN_MS passed). `memory`: the
   * kernel killed a process of its tree at the memory limit of the run's cgroup (forked processes).
   * `limit`: its fork server killed it at a limit of its run sandbox (native/sandbox.c).
   */
  exit(code: number | null, signal: NodeJS.Signals | null, memory?: boolean, limit?: SandboxLimitHit): void;
  /**
   * The process could not be started (`spawn`), or was lost: its end can no longer be observed
   * (the fork server died), so it was killed.
   */
  failed(reason: 'spawn' | 'lost', message: string): void;
}

/**
 * One OS process running a runtime shim, however it was started: spawned (node; python without
 * the fork server) or forked by the Python fork server (ForkServer.ts). RuntimeProcess keeps the
 * protocol, the watchdog and the exit semantics on top of this, for both kinds.
 */
export interface ProcessHandle {
  /** Process id; a forked process has none until the fork server reported it. */
  readonly pid: number | undefined;
  /**
   * The memory cgroup of the process's tree (a forked process whose fork server made one), which is
   * killed and removed when the process is reaped: what else the run starts (the install step) joins it.
   */
  readonly cgroup?: string | undefined;
  /** Writes protocol bytes; what is written before the channel is connected is queued. */
  write(text: string): void;
  /** Signal to the process itself (SIGINT: interrupt the current call). */
  signal(name: NodeJS.Signals): void;
  /** SIGKILL to the process group, also when the process is still starting. */
  kill(): void;
  /** Releases the channel once the process has ended. */
  close(): void;
  /** Whether the process holds the parent's event loop open (starting or busy) or not (idle in a pool). */
  setRef(ref: boolean): void;
}

/** The limit of its run sandbox a process hit, as its fork server reports it (names checked by the reader). */
export interface SandboxLimitHit {
  limit: unknown;
  setting: unknown;
  value: unknown;
}

/** `events` that report at most one end (exit or failed) and nothing after it. */
export function endingOnce(events: ProcessEvents): ProcessEvents {
  let ended = false;
  return {
    data: (chunk) => {
      if (!ended) events.data(chunk);
    },
    output: (chunk, stream) => {
      if (!ended) events.output(chunk, stream);
    },
    exit: (code, signal, memory, limit) => {
      if (ended) return;
      ended = true;
      events.exit(code, signal, memory, limit);
    },
    failed: (reason, message) => {
      if (ended) return;
      ended = true;
      events.failed(reason, message);
    },
  };
}

export interface SpawnOptions {
  /** For messages: "python", "javascript". */
  label: string;
  executable: string;
  args: string[];
  /** Working directory, HOME and TMPDIR. */
  dir: string;
  runAs?: RunAs;
}

/** A spawned interpreter in its own process group, protocol on fd 3, stdout/stderr piped. */
export class SpawnedProcess implements ProcessHandle {
  private readonly child: ChildProcess;
  private readonly channel: Socket;

  constructor(options: SpawnOptions, reported: ProcessEvents) {
    const events = endingOnce(reported);
    this.child = spawn(options.executable, options.args, {
      cwd: options.dir,
      // CODERUN_PARENT_PID: the runtime dies with this process (parent-death signal; it removes the variable).
      env: { ...scrubbedEnv(options.dir), CODERUN_PARENT_PID: String(process.pid) },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      ...(options.runAs ? { uid: options.runAs.uid, gid: options.runAs.gid } : {}),
    });
    this.channel = this.child.stdio[3] as Socket;
    this.channel.on('data', (chunk: Buffer) => events.data(chunk));
    this.channel.on('error', () => {});
    (this.child.stdout as Readable).on('data', (chunk: Buffer) => events.output(chunk, 'stdout'));
    (this.child.stderr as Readable).on('data', (chunk: Buffer) => events.output(chunk, 'stderr'));
    this.child.on('error', (error) => events.failed('spawn', `could not start the ${options.label} runtime (${options.executable}): ${error.message}`));
    this.child.on('exit', (code, signal) => {
      const settle = () => events.exit(code, signal);
      const timer = setTimeout(settle, OUTPUT_DRAIN_MS);
      this.child.once('close', () => {
        clearTimeout(timer);
        settle();
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  write(text: string): void {
    this.channel.write(text);
  }

  signal(name: NodeJS.Signals): void {
    try {
      if (this.child.pid !== undefined) process.kill(this.child.pid, name);
    } catch {
      // gone
    }
  }

  kill(): void {
    killGroup(this.child.pid);
  }

  close(): void {
    this.channel.destroy();
  }

  setRef(ref: boolean): void {
    const handles = [this.child, this.channel, this.child.stdout, this.child.stderr] as Array<{ ref?(): void; unref?(): void } | null>;
    for (const handle of handles) {
      if (ref) handle?.ref?.();
      else handle?.unref?.();
    }
  }
}
