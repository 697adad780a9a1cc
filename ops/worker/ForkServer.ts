import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BoundedLineReader, TailBuffer } from './boundedOutput.ts';
import { endingOnce, OUTPUT_DRAIN_MS, type ProcessEvents, type ProcessHandle, type SandboxLimitHit } from './processHandle.ts';
import { socketPeerPid } from './nodeForkProgram.ts';
import { bwrapArgs, killGroup, scrubbedEnv, type BwrapLayout, type RunAs } from './sandbox.ts';
import { systemProgram } from './systemPrograms.ts';

const FORK_SERVER_SCRIPT = fileURLToPath(new URL('./runtime/forkserver.py', import.meta.url));
/** Control messages are a few hundred bytes; anything longer is a broken fork server. */
const CONTROL_LINE_BYTES = 64 * 1024;
/** A child's hello line; a connection that sends more (or nothing for HELLO_TIMEOUT_MS) is dropped. */
const HELLO_BYTES = 1024;
const HELLO_TIMEOUT_MS = 5000;
/** close(): how long the children's exits and the fork server's own exit are waited for. */
const CLOSE_WAIT_MS = 2000;
/** Longest Unix socket path Linux accepts (sun_path is 108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107;

export interface ForkServerOptions {
  /** The interpreter of the fork server: the real python3 executable, or node for `program`. */
  executable: string;
  /**
   * Another fork server speaking the same control protocol: its arguments before the socket path
   * (and the runAs uid and gid), and its name in messages. Default: runtime/forkserver.py.
   */
  program?: { args: ReadonlyArray<string>; label: string; env?: Record<string, string> };
  /** Forked children drop to this user (the fork server keeps the service's uid). */
  runAs?: RunAs;
  /** Parent of the private socket directory. Default: the OS temp dir (/tmp when that path is too long). */
  socketRoot?: string;
  /**
   * Runs the fork server inside a bubblewrap sandbox of this layout (the socket directory is added
   * to its writable paths; sandbox.ts, bwrapArgs). Its children's pids are then those of the
   * sandbox's pid namespace: the real ones are read from their connections (SO_PEERCRED).
   */
  bwrap?: BwrapLayout;
}

export interface ForkRequest {
  /**
   * Working directory, HOME and TMPDIR of the child, which makes it (0700, owned by runAs) before
   * dropping privileges: the runner makes no directory per process on its event loop. A name
   * already taken fails the fork (the names are random).
   */
  dir: string;
  /** RLIMIT_AS budget on top of the child's footprint at fork time (as runtime.py does when spawned). */
  memoryMb: number;
  /**
   * Another runtime (node) to exec in the prepared child instead of serving the Python one: the
   * same fds, session, identity, directory and environment as a spawn, but forked from the small
   * fork server rather than from the service, whose fork() copies its page tables on its event loop
   * (~1 ms at 50 MB of RSS, ~10 ms at 2 GB). Its memory limit is in its own arguments: no RLIMIT_AS.
   */
  exec?: { executable: string; args: ReadonlyArray<string> };
  /** This child's own identity (distinct per live process); default: the fork server's runAs. */
  runAs?: RunAs;
  /** Memory limit of the child's whole process tree (its own cgroup, where the fork server can make one). */
  treeMb?: number;
  /**
   * The run's own namespaces and root (native/sandbox.c, as root with runAs): the child is forked as
   * pid 1 of a pid namespace of its own; its hellos name it by its pid here. The fork server checks
   * its limits (processes, disk, shared memory) every 100 ms and reports a kill at one with its exit.
   */
  sandbox?: SandboxSpec;
}

/** What native/sandbox.c is told about one run's sandbox (its spec keys). */
export interface SandboxSpec {
  disk_mb: number;
  shm_mb: number;
  inodes: number;
  limit_pids: number;
  net: 'none' | 'host';
  /** Host paths shown read-only at the same place (the system, the interpreters). */
  ro: ReadonlyArray<string>;
  /** Paths hidden behind an empty tmpfs where `ro` showed them (DATA_DIR, LOG_DIR, the checkout). */
  hide: ReadonlyArray<string>;
  /** Shown read-only after the hiding (the runtime files and the addon inside the checkout). */
  after: ReadonlyArray<string>;
  /** cgroup directories the run joins (pids, cpu), made and limited by the runner. */
  join: ReadonlyArray<string>;
  /** The pids.events file of its pids cgroup, watched by the fork server for the process limit. */
  pids_events?: string;
}

/** `output`: stdout (and stderr too, unless its hello says `split`); `error`: stderr, when split. */
type Channel = 'protocol' | 'output' | 'error';

/**
 * Python runtime processes forked from a pre-initialised interpreter (runtime/forkserver.py)
 * instead of spawned: ~1-2 ms instead of ~47 ms of CPU each; node runtimes exec'd in children
 * prepared the same way (ForkRequest.exec). One fork server per runner: the
 * memory budget travels with each fork request (the child sets its own RLIMIT_AS) and runAs is a
 * runner setting, so nothing else would tell two fork servers apart.
 *
 * Transport: the fork server speaks JSON lines on fd 3 (fork requests in; forked/exit reports
 * out). A child cannot be handed pipes by this process after the fact and Node cannot receive
 * file descriptors over a socket, so each child connects to a Unix socket this runner listens on,
 * in a private 0700 directory, three times (protocol channel; stdout; stderr), each time with a
 * hello line carrying the random token of its fork request. A child of a node fork server whose
 * addon predates the stderr channel connects twice, stdout and stderr merged: its output hello
 * lacks `split`, and its stderr is reported as stdout. The fork server reaps its children
 * and reports every exit (code, signal), which keeps RuntimeProcess's exit semantics.
 *
 * If the fork server dies, forks not yet reported fail and children it can no longer reap are
 * killed (their end could not be observed otherwise); the next fork starts a new fork server.
 */
export class ForkServer {
  private zygote: Zygote | null = null;
  private server: Server | null = null;
  private socketDir: string | null = null;
  /** Forks waiting for their two connections, by token. */
  private readonly connecting = new Map<string, ForkedProcess>();
  private closed = false;
  /** Fork servers in a row that ended without ever being ready. */
  private failedStarts = 0;

  constructor(private readonly options: ForkServerOptions) {}

  private get label(): string {
    return labelOf(this.options);
  }

  /** Starts the fork server now (it is otherwise started by the first fork). */
  prestart(): void {
    if (!this.closed) this.ensureZygote();
  }

  /** A new runtime process in `request.dir`; its events arrive through `events`. */
  fork(request: ForkRequest, events: ProcessEvents): ProcessHandle {
    const token = randomBytes(16).toString('hex');
    if (this.closed) return ForkedProcess.failing(token, events, 'the code runner is closed');
    let zygote: Zygote;
    try {
      zygote = this.ensureZygote();
    } catch (error) {
      return ForkedProcess.failing(token, events, `could not start the ${this.label} fork server: ${(error as Error).message}`);
    }
    const handle = new ForkedProcess(token, events, zygote, () => this.connecting.delete(token));
    this.connecting.set(token, handle);
    zygote.request(handle, {
      op: 'fork',
      token,
      dir: request.dir,
      memoryMb: request.memoryMb,
      create: true,
      ...(request.exec ? { exec: request.exec } : {}),
      ...(request.runAs ? { uid: request.runAs.uid, gid: request.runAs.gid } : {}),
      ...(request.treeMb !== undefined ? { treeMb: request.treeMb } : {}),
      ...(request.sandbox ? { sandbox: request.sandbox } : {}),
    });
    return handle;
  }

  /**
   * Whether its fork servers keep dying before they are ready (twice in a row): a program that cannot
   * start here (an interpreter without a flag it needs, say). The caller then starts processes
   * another way instead of failing every run.
   */
  get broken(): boolean {
    return this.failedStarts >= 2;
  }

  /** Process id of the running fork server (none before the first fork or after close). */
  pids(): number[] {
    const pid = this.zygote?.alive ? this.zygote.pid : undefined;
    return pid === undefined ? [] : [pid];
  }

  /** Kills the children still alive, then the fork server; removes the socket directory. */
  async close(): Promise<void> {
    this.closed = true;
    const zygote = this.zygote;
    this.zygote = null;
    if (zygote) await zygote.shutdown();
    this.server?.close();
    this.server = null;
    if (this.socketDir) rmSync(this.socketDir, { recursive: true, force: true });
    this.socketDir = null;
  }

  private ensureZygote(): Zygote {
    if (this.zygote?.alive) return this.zygote;
    const socketPath = this.ensureServer();
    const zygote = new Zygote(this.options, socketPath, this.socketDir ?? tmpdir(), (wasReady) => {
      if (this.zygote === zygote) this.zygote = null;
      this.failedStarts = wasReady ? 0 : this.failedStarts + 1;
    });
    this.zygote = zygote;
    return zygote;
  }

  /** The listening socket's path; the server is bound synchronously, before any child can connect. */
  private ensureServer(): string {
    if (this.server && this.socketDir) return join(this.socketDir, 's');
    let root = this.options.socketRoot ?? tmpdir();
    if (join(root, 'forkserver-XXXXXX', 's').length > MAX_SOCKET_PATH) root = '/tmp';
    // mkdtemp makes the directory 0700: only the service's uid (and root) can connect.
    const dir = mkdtempSync(join(root, 'forkserver-'));
    const server = createServer((socket) => this.accept(socket));
    server.on('error', () => {
      // Children of pending forks cannot connect; they exit and their forks fail. Start over next time.
      if (this.server === server) {
        this.server = null;
        rmSync(dir, { recursive: true, force: true });
        this.socketDir = null;
      }
      server.close();
    });
    server.listen(join(dir, 's'));
    server.unref();
    this.server = server;
    this.socketDir = dir;
    return join(dir, 's');
  }

  /** A child's connection: its hello line names the fork (token) and the channel. */
  private accept(socket: Socket): void {
    socket.on('error', () => {});
    socket.unref();
    let head = Buffer.alloc(0);
    const timer = setTimeout(() => socket.destroy(), HELLO_TIMEOUT_MS);
    timer.unref();
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf(10);
      if (end === -1) {
        if (head.length > HELLO_BYTES) socket.destroy();
        return;
      }
      clearTimeout(timer);
      socket.off('data', onData);
      // Held back until the process is complete (pid and every channel); what followed the hello stays first.
      socket.pause();
      if (end + 1 < head.length) socket.unshift(head.subarray(end + 1));
      const hello = parseHello(head.subarray(0, end));
      const handle = hello ? this.connecting.get(hello.token) : undefined;
      // Sandboxed (bubblewrap): the hello's pid is the child's in the sandbox's pid namespace; the
      // kernel's record of who connected gives the pid to signal and watch here. (A run sandbox of
      // native/sandbox.c names its process by its pid here in the hello itself.)
      const hostPid = this.options.bwrap ? peerPidOf(socket) : hello?.pid;
      if (!hello || !handle || hostPid === undefined || !handle.connected(hello.channel, socket, hello.pid, hostPid, hello.split)) socket.destroy();
    };
    socket.on('data', onData);
    socket.once('close', () => clearTimeout(timer));
  }
}

/** A process handle whose start fails at once with `message` (reported asynchronously). */
export function failedStart(events: ProcessEvents, message: string): ProcessHandle {
  return ForkedProcess.failing(randomBytes(16).toString('hex'), events, message);
}

/** One fork server process; replaced by a new one when it ends. */
class Zygote {
  alive = true;
  /** It said ready (it started; a later end is not a failed start). */
  private ready = false;
  /** Its name in messages ('python', 'node'). */
  readonly label: string;
  readonly exited: Promise<void>;
  /** Forks requested, not yet reported as forked. */
  private readonly starting = new Map<string, ForkedProcess>();
  /** Forked children until their exit is reported. */
  private readonly children = new Map<number, ForkedProcess>();
  private readonly child: ChildProcess;
  private readonly control: Socket;
  private readonly reader: BoundedLineReader;
  private readonly tail = new TailBuffer(4096);
  private refs = 0;
  private settleExited: () => void = () => {};

  constructor(
    private readonly options: ForkServerOptions,
    socketPath: string,
    dir: string,
    private readonly onEnd: (wasReady: boolean) => void,
  ) {
    this.exited = new Promise<void>((resolve) => {
      this.settleExited = resolve;
    });
    const runAs = options.runAs ? [String(options.runAs.uid), String(options.runAs.gid)] : [];
    this.label = labelOf(options);
    const args = options.program?.args ?? ['-I', '-u', '-B', FORK_SERVER_SCRIPT];
    const command = [options.executable, ...args, socketPath, ...runAs];
    const sandbox = options.bwrap ? { ...options.bwrap, writable: [...options.bwrap.writable, dir] } : null;
    this.child = spawn(sandbox ? systemProgram('bwrap') : options.executable, sandbox ? [...bwrapArgs(sandbox), '--chdir', dir, '--', ...command] : command.slice(1), {
      cwd: dir,
      // CODERUN_PARENT_PID: the fork server dies with this process (parent-death signal), and exits at
      // once if this process was gone before it could ask for that. In a bubblewrap sandbox its
      // parent is bubblewrap's init (pid 1 of the sandbox), and the whole sandbox dies with this
      // process (--die-with-parent); CODERUN_SANDBOX=bwrap makes it and its children non-dumpable
      // and has it kill what runs leave behind (no cgroups without root).
      // CODERUN_CGROUPS=off (diagnostics: runs without cgroups of their own) is passed on.
      env: {
        ...scrubbedEnv(dir),
        ...options.program?.env,
        ...(sandbox ? { CODERUN_SANDBOX: 'bwrap' } : { CODERUN_PARENT_PID: String(process.pid) }),
        ...(process.env.CODERUN_CGROUPS ? { CODERUN_CGROUPS: process.env.CODERUN_CGROUPS } : {}),
      },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    });
    this.control = this.child.stdio[3] as Socket;
    this.reader = new BoundedLineReader(
      CONTROL_LINE_BYTES,
      (line) => this.onLine(line),
      () => this.kill(),
    );
    this.control.on('data', (chunk: Buffer) => this.reader.push(chunk));
    this.control.on('error', () => {});
    this.child.stdout?.on('data', (chunk: Buffer) => this.tail.append(chunk));
    this.child.stderr?.on('data', (chunk: Buffer) => this.tail.append(chunk));
    this.child.on('error', (error) => this.end(`could not start the ${this.label} fork server (${options.executable}): ${error.message}`));
    this.child.on('exit', (code, signal) => {
      const how = signal ? `signal ${signal}` : `exit code ${code}`;
      const settle = () => this.end(`the ${this.label} fork server ended (${how})`);
      const timer = setTimeout(settle, OUTPUT_DRAIN_MS);
      this.child.once('close', () => {
        clearTimeout(timer);
        settle();
      });
    });
    this.applyRef();
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Its children's pids are those of a sandbox's pid namespace (bubblewrap). */
  get sandboxed(): boolean {
    return this.options.bwrap !== undefined;
  }

  request(
    handle: ForkedProcess,
    message: { op: 'fork'; token: string; dir: string; memoryMb: number; create: boolean; exec?: ForkRequest['exec']; uid?: number; gid?: number; treeMb?: number; sandbox?: SandboxSpec },
  ): void {
    // Written at once: the fork server reads it when it is ready (the socket pair buffers it).
    this.starting.set(handle.token, handle);
    this.control.write(`${JSON.stringify(message)}\n`);
  }

  /** Busy or starting children hold the event loop (their exit reports arrive here); idle ones do not. */
  retain(): void {
    this.refs += 1;
    if (this.refs === 1) this.applyRef();
  }

  release(): void {
    this.refs = Math.max(0, this.refs - 1);
    if (this.refs === 0) this.applyRef();
  }

  /** Kills every child, waits (bounded) until the fork server reported their exits, then ends it. */
  async shutdown(): Promise<void> {
    if (this.alive) {
      for (const handle of [...this.starting.values(), ...this.children.values()]) handle.kill();
      const deadline = Date.now() + CLOSE_WAIT_MS;
      while (this.alive && (this.starting.size > 0 || this.children.size > 0) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
    // EOF on its control channel: it kills what the runs left, removes their cgroups and exits.
    // SIGKILL only if that does not happen in time (it would leave its cgroups to the next start).
    if (this.alive) this.control.end();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS)))]);
    clearTimeout(timer);
    if (this.alive) this.kill();
  }

  private kill(): void {
    killGroup(this.child.pid);
  }

  private applyRef(): void {
    const handles = [this.child, this.control, this.child.stdout, this.child.stderr] as Array<{ ref?(): void; unref?(): void } | null>;
    for (const handle of handles) {
      if (this.refs > 0) handle?.ref?.();
      else handle?.unref?.();
    }
  }

  private onLine(line: string): void {
    let message: { op?: unknown; token?: unknown; pid?: unknown; code?: unknown; signal?: unknown; error?: unknown; memory?: unknown; limit?: unknown; cgroup?: unknown };
    try {
      message = JSON.parse(line) as typeof message;
    } catch {
      this.kill();
      return;
    }
    const token = typeof message.token === 'string' ? message.token : '';
    const pid = typeof message.pid === 'number' ? message.pid : -1;
    switch (message.op) {
      case 'forked': {
        const handle = this.starting.get(token);
        if (!handle) return;
        this.starting.delete(token);
        this.children.set(pid, handle);
        handle.forked(pid, typeof message.cgroup === 'string' ? message.cgroup : undefined);
        return;
      }
      case 'fork_failed': {
        const handle = this.starting.get(token);
        this.starting.delete(token);
        handle?.fail(`could not fork the ${this.label} runtime: ${String(message.error)}`);
        return;
      }
      case 'exit': {
        const handle = this.children.get(pid);
        if (!handle) return;
        this.children.delete(pid);
        const code = typeof message.code === 'number' ? message.code : null;
        const signal = typeof message.signal === 'string' ? (message.signal as NodeJS.Signals) : null;
        const limit = message.limit !== null && typeof message.limit === 'object' ? (message.limit as SandboxLimitHit) : undefined;
        handle.exited(code, signal, this.tail.text(), message.memory === true, limit);
        return;
      }
      case 'ready':
        this.ready = true;
        return;
      default:
      // anything newer: nothing to do.
    }
  }

  private end(message: string): void {
    if (!this.alive) return;
    this.alive = false;
    this.reader.stop();
    this.control.destroy();
    this.onEnd(this.ready);
    const tail = lastLines(this.tail.text());
    const detail = tail ? `; last output: ${tail}` : '';
    for (const handle of this.starting.values()) handle.fail(`${message}; the runtime process was not started${detail}`);
    for (const handle of this.children.values()) handle.lost(`${message}; the runtime process could no longer be supervised and was stopped`);
    this.starting.clear();
    this.children.clear();
    this.settleExited();
  }
}

/** A runtime process forked by the fork server: complete once its pid and both connections are known. */
class ForkedProcess implements ProcessHandle {
  cgroup: string | undefined;
  /** Its pid as the fork server knows it (in a sandbox: in the sandbox's pid namespace). */
  private serverPid: number | undefined;
  /** Its pid here (the same outside a sandbox), from its connections. */
  private hostPid: number | undefined;
  private readonly events: ProcessEvents;
  private protocol: Socket | null = null;
  private output: Socket | null = null;
  private error: Socket | null = null;
  /** stderr has a channel of its own (the output hello says so); undefined until that hello came. */
  private split: boolean | undefined;
  private claimedPid: number | undefined;
  private started = false;
  private ended = false;
  private reaped = false;
  private killRequested = false;
  private ref = true;
  private holding = false;
  private readonly queued: string[] = [];

  constructor(
    readonly token: string,
    events: ProcessEvents,
    private readonly zygote: Zygote | null,
    private readonly forget: () => void,
  ) {
    this.events = endingOnce(events);
    this.hold(true);
  }

  /** A handle whose start failed at once (closed runner, no fork server); reported asynchronously. */
  static failing(token: string, events: ProcessEvents, message: string): ForkedProcess {
    const handle = new ForkedProcess(token, events, null, () => {});
    setImmediate(() => handle.fail(message));
    return handle;
  }

  /**
   * Process id here: signals, the watchdog (bubblewrap: known once it connected). In a run sandbox,
   * the runtime process's (from the hellos); until then the supervisor's, whose kill ends the run.
   */
  get pid(): number | undefined {
    return this.zygote?.sandboxed ? this.hostPid : (this.hostPid ?? this.serverPid);
  }

  forked(pid: number, cgroup?: string): void {
    this.serverPid = pid;
    this.cgroup = cgroup;
    if (this.killRequested || (this.claimedPid !== undefined && this.claimedPid !== pid)) {
      this.killNow();
      if (!this.killRequested) this.fail('a connection claimed the runtime process of another fork');
      return;
    }
    this.maybeStart();
  }

  /** One of the child's connections; false when it is not acceptable (duplicate, wrong pid). */
  connected(channel: Channel, socket: Socket, pid: number, hostPid: number, split: boolean): boolean {
    if (this.ended) return false;
    if (this.serverPid !== undefined && pid !== this.serverPid) return false;
    if (this.hostPid !== undefined && hostPid !== this.hostPid) return false;
    if (channel === 'protocol' && this.protocol === null) this.protocol = socket;
    else if (channel === 'output' && this.output === null && !(this.error !== null && !split)) {
      this.output = socket;
      this.split = split;
    } else if (channel === 'error' && this.error === null && this.split !== false) this.error = socket;
    else return false;
    this.claimedPid = pid;
    this.hostPid = hostPid;
    // A kill asked for before the real pid was known (sandboxed).
    if (this.killRequested && !this.reaped) this.killNow();
    if (this.connectedAll) this.forget();
    this.maybeStart();
    return true;
  }

  /** The fork server reaped the child. */
  exited(code: number | null, signal: NodeJS.Signals | null, serverOutput: string, memory = false, limit?: SandboxLimitHit): void {
    this.reaped = true;
    this.forget();
    if (!this.started) {
      const how = signal ? `signal ${signal}` : `exit code ${code}`;
      const tail = lastLines(serverOutput);
      this.fail(`the ${this.zygote?.label ?? 'forked'} runtime process ended while starting (${how})${tail ? `; last output: ${tail}` : ''}`);
      return;
    }
    // Its last output and protocol bytes may still be in flight: wait for its channels to close.
    const sockets = [this.protocol, this.output, this.error].filter((s): s is Socket => s !== null && !s.destroyed);
    let open = sockets.length;
    const settle = () => this.finish(() => this.events.exit(code, signal, memory, limit));
    if (open === 0) return settle();
    const timer = setTimeout(settle, OUTPUT_DRAIN_MS);
    for (const socket of sockets) {
      socket.once('close', () => {
        open -= 1;
        if (open > 0) return;
        clearTimeout(timer);
        settle();
      });
    }
  }

  /** The fork server is gone: the child cannot be reaped or reported by anyone, so it is stopped. */
  lost(message: string): void {
    this.killNow();
    this.reaped = true;
    this.fail(message, 'lost');
  }

  fail(message: string, reason: 'spawn' | 'lost' = 'spawn'): void {
    this.forget();
    this.protocol?.destroy();
    this.output?.destroy();
    this.error?.destroy();
    this.finish(() => this.events.failed(reason, message));
  }

  write(text: string): void {
    if (this.started && this.protocol) this.protocol.write(text);
    else if (!this.ended) this.queued.push(text);
  }

  signal(name: NodeJS.Signals): void {
    if (this.pid === undefined || this.reaped) return;
    try {
      process.kill(this.pid, name);
    } catch {
      // gone
    }
  }

  kill(): void {
    this.killRequested = true;
    if (!this.reaped) this.killNow();
  }

  close(): void {
    // Called once the end was reported (output drained): a descendant that escaped the process
    // group and still holds the output socket must not keep it open here.
    this.protocol?.destroy();
    this.output?.destroy();
    this.error?.destroy();
  }

  setRef(ref: boolean): void {
    this.ref = ref;
    if (!this.ended) this.hold(ref);
    for (const socket of [this.protocol, this.output, this.error]) {
      if (!socket || !this.started) continue;
      if (ref) socket.ref();
      else socket.unref();
    }
  }

  /**
   * SIGKILL to the process group and to the process itself: a child killed right after the fork
   * may not have called setsid yet, and then has no group of its own.
   */
  private killNow(): void {
    if (this.pid === undefined) return;
    killGroup(this.pid);
    try {
      process.kill(this.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }

  /** Every channel the child makes is connected: protocol, output and (when split) error. */
  private get connectedAll(): boolean {
    return this.protocol !== null && this.output !== null && (this.split === false || this.error !== null);
  }

  private maybeStart(): void {
    if (this.started || this.ended || this.killRequested || this.serverPid === undefined || this.pid === undefined || !this.connectedAll) return;
    const { protocol, output, error } = this;
    if (!protocol || !output) return;
    this.started = true;
    protocol.on('data', (chunk: Buffer) => this.events.data(chunk));
    output.on('data', (chunk: Buffer) => this.events.output(chunk, 'stdout'));
    error?.on('data', (chunk: Buffer) => this.events.output(chunk, 'stderr'));
    protocol.resume();
    output.resume();
    error?.resume();
    this.setRef(this.ref);
    for (const text of this.queued.splice(0)) protocol.write(text);
  }

  private finish(report: () => void): void {
    if (this.ended) return;
    this.ended = true;
    this.hold(false);
    report();
  }

  /** Keeps the fork server's channel referenced while this process is starting or busy. */
  private hold(on: boolean): void {
    if (on === this.holding || !this.zygote) return;
    this.holding = on;
    if (on) this.zygote.retain();
    else this.zygote.release();
  }
}

/** The connecting process's pid in this pid namespace (SO_PEERCRED on the socket's fd). */
function peerPidOf(socket: Socket): number | undefined {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? socketPeerPid(fd) : undefined;
}

function parseHello(line: Buffer): { token: string; pid: number; channel: Channel; split: boolean } | null {
  try {
    const hello = JSON.parse(line.toString('utf8')) as { token?: unknown; pid?: unknown; channel?: unknown; split?: unknown };
    if (typeof hello.token !== 'string' || typeof hello.pid !== 'number') return null;
    if (hello.channel !== 'protocol' && hello.channel !== 'output' && hello.channel !== 'error') return null;
    return { token: hello.token, pid: hello.pid, channel: hello.channel, split: hello.split === true };
  } catch {
    return null;
  }
}

/** The fork server's name in messages ('python' unless its program says otherwise). */
function labelOf(options: ForkServerOptions): string {
  return options.program?.label ?? 'python';
}

function lastLines(text: string): string {
  return text.trim().split('\n').slice(-3).join(' | ').slice(-500);
}
