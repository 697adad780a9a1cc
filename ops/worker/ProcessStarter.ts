import { chownSync } from 'node:fs';
import type { Language } from '../../shared/ports/CodeRunner.ts';
import { failedStart, ForkServer, type SandboxSpec } from './ForkServer.ts';
import { IdentityHolders } from './identityHandle.ts';
import { nodeForkAddonLoads, nodeForkProgram } from './nodeForkProgram.ts';
import { SpawnedProcess, type ProcessEvents, type ProcessHandle } from './processHandle.ts';
import { RuntimeProcess, runtimeArgs } from './RuntimeProcess.ts';
import type { RunCgroup, RunCgroups } from './runCgroups.ts';
import { sandboxSpec, type RunSandboxLimits } from './runSandbox.ts';
import type { BwrapLayout, RunAs, RunIdentities } from './sandbox.ts';

/** Every run process in a sandbox of its own (native/sandbox.c; as root, with run identities). */
export interface RunSandboxSetup {
  layout: { ro: string[]; hide: string[]; after: string[] };
  limits: RunSandboxLimits;
  cgroups: RunCgroups;
}

export interface ProcessStarterOptions {
  executables: Readonly<Record<Language, string | null>>;
  /** The run user (the fork servers drop their children to it), when there is one. */
  runAs: RunAs | undefined;
  /** Identities handed to processes, one per live process, never shared (null: the service's own). */
  identities: RunIdentities | null;
  /** The bubblewrap sandbox of every fork server (undefined: none). */
  bwrap: BwrapLayout | undefined;
  memoryHeadroomMb: number;
  pythonForkServer: boolean;
  nodeForkServer: boolean;
  maxNodeForkServers: number;
  /** The runner is closed: no node fork server is made any more. */
  closed: () => boolean;
  /** Each run process in namespaces, a root and limits of its own (as root). */
  sandbox?: RunSandboxSetup;
}

/**
 * How the runtime processes start: the Python fork server, the node fork servers (one per memory
 * limit), or a spawn, and the identity each process gets (ProcessCodeRunnerOptions: pythonForkServer,
 * nodeForkServer, runAs, bwrap).
 */
export class ProcessStarter {
  readonly forkServer: ForkServer | null;
  /** Node fork servers by memory limit; null when JavaScript processes are not forked. */
  private readonly nodeForkServers: Map<number, ForkServer> | null;
  private readonly executables: Readonly<Record<Language, string | null>>;
  private readonly runAs: RunAs | undefined;
  /** Who holds the identities (null: processes run as the service's own). */
  private readonly holders: IdentityHolders | null;
  private readonly bwrap: BwrapLayout | undefined;
  private readonly headroomMb: number;
  private readonly maxNodeForkServers: number;
  private readonly closed: () => boolean;
  readonly sandbox: RunSandboxSetup | undefined;

  constructor(options: ProcessStarterOptions) {
    this.sandbox = options.sandbox;
    this.executables = options.executables;
    this.runAs = options.runAs;
    this.holders = options.identities ? new IdentityHolders(options.identities) : null;
    this.bwrap = options.bwrap;
    this.headroomMb = options.memoryHeadroomMb;
    this.maxNodeForkServers = options.maxNodeForkServers;
    this.closed = options.closed;
    const python = this.executables.python;
    this.forkServer =
      python && options.pythonForkServer
        ? new ForkServer({ executable: python, ...(this.runAs ? { runAs: this.runAs } : {}), ...(this.bwrap ? { bwrap: this.bwrap } : {}) })
        : null;
    this.nodeForkServers = options.nodeForkServer && nodeForkAddonLoads() ? new Map() : null;
  }

  /** JavaScript processes are forked from node fork servers. */
  get forksNode(): boolean {
    return this.nodeForkServers !== null;
  }

  /** Process ids of the node fork servers that run. */
  nodeForkServerPids(): number[] {
    return [...(this.nodeForkServers?.values() ?? [])].flatMap((server) => server.pids());
  }

  async close(): Promise<void> {
    await Promise.all([this.forkServer?.close(), ...[...(this.nodeForkServers?.values() ?? [])].map((server) => server.close())]);
  }

  /**
   * One runtime process in `dir`, started through `server` (null: spawned), with an identity of its
   * own. When every identity is held, the process is made at once and starts when one is released
   * (IdentityHandle): a run that takes it waits for that (identityArrival) within its time limit.
   */
  startProcess(language: Language, memoryMb: number, dir: string, server: ForkServer | null): RuntimeProcess {
    // As root every run process is forked into a sandbox of its own: never a spawned one.
    const sandboxed = this.sandbox !== undefined && this.holders !== null && server !== null;
    const common = { language, memoryMb, dir, memoryHeadroomMb: this.headroomMb, makesOwnDir: server !== null, inSandbox: sandboxed };
    const holders = this.holders;
    if (!holders) return new RuntimeProcess({ ...common, launch: (events) => this.launch(language, memoryMb, dir, server, undefined, events) });
    let cgroup: RunCgroup | null = null;
    const proc = holders.start(common, (runAs, events) => {
      if (this.sandbox && !sandboxed) {
        return failedStart(events, 'as root, run processes start only from their fork servers, each in a sandbox of its own (the Python fork server is turned off or python3 is missing)');
      }
      if (!sandboxed || !this.sandbox) {
        if (server === null) chownSync(dir, runAs.uid, runAs.gid);
        return this.launch(language, memoryMb, dir, server, runAs, events);
      }
      // The run's pids and cpu cgroups: taken when its OS process starts, back to the pool once it is gone.
      cgroup = this.sandbox.cgroups.take();
      return this.launch(language, memoryMb, dir, server, runAs, events, sandboxSpec(this.sandbox.layout, this.sandbox.limits, cgroup));
    });
    void proc.exited.then(() => {
      if (cgroup) this.sandbox?.cgroups.release(cgroup);
    });
    return proc;
  }

  /**
   * For a process still in line for its identity: resolves true once it has one (it is starting),
   * false when it ended first. Null when it needs no wait.
   */
  identityArrival(proc: RuntimeProcess): Promise<boolean> | null {
    return this.holders?.arrival(proc) ?? null;
  }

  /** The identities (null: processes run as the service's own). */
  get identities(): RunIdentities | null {
    return this.holders?.identities ?? null;
  }

  /**
   * JavaScript that uses worker threads runs in a node exec'd for it (by the Python fork server),
   * never in a forked one: a forked node has none of the fork server's platform threads, and a
   * worker's exit, which drains the tasks posted to them, sometimes never came (most runs on a
   * loaded machine; docs/decisions.md, "JavaScript fork server"). Decided on the code's text: code
   * that reaches worker_threads without naming it keeps the forked node and that risk. Not in the
   * bubblewrap sandbox, where an exec'd node is refused.
   */
  needsExecNode(codeblock: { language: Language; code: string }): boolean {
    return codeblock.language === 'javascript' && this.nodeForkServers !== null && this.forkServer !== null && !this.bwrap && codeblock.code.includes('worker_threads');
  }

  /**
   * The fork server that starts processes of (language, memoryMb), or null when they are spawned:
   * Python through the Python fork server; JavaScript through the node fork server of its memory
   * limit (made at the first need, up to maxNodeForkServers limits; not once it is broken), else
   * exec'd by the Python one.
   */
  forkedBy(language: Language, memoryMb: number): ForkServer | null {
    if (language === 'python' || !this.nodeForkServers || this.closed()) return this.forkServer;
    let server = this.nodeForkServers.get(memoryMb);
    if (server?.broken) return this.forkServer;
    if (!server && this.nodeForkServers.size < this.maxNodeForkServers) {
      const program = nodeForkProgram(memoryMb);
      if (program) {
        server = new ForkServer({
          executable: this.executables.javascript ?? process.execPath,
          program,
          ...(this.runAs ? { runAs: this.runAs } : {}),
          ...(this.bwrap ? { bwrap: this.bwrap } : {}),
        });
        this.nodeForkServers.set(memoryMb, server);
      }
    }
    return server ?? this.forkServer;
  }

  /**
   * Starts one runtime process through a fork server when there is one (Python: forked from the
   * Python one; node: forked from the node one of its memory limit, or exec'd in a child forked from
   * the Python one, so that the service's own fork() with its large heap stays off the event loop),
   * otherwise spawned.
   */
  private launch(language: Language, memoryMb: number, dir: string, server: ForkServer | null, runAs: RunAs | undefined, events: ProcessEvents, sandbox?: SandboxSpec): ProcessHandle {
    // Never a name looked up on PATH (README, Security): no interpreter, no process (runs check first).
    const executable = this.executables[language];
    if (!executable) return failedStart(events, `no ${language} interpreter`);
    const execNode = language === 'javascript' && server !== null && server === this.forkServer;
    if (this.bwrap && (server === null || execNode)) {
      // A spawned runtime's pid would be bubblewrap's (no interrupt, no watchdog), and an exec'd node
      // is dumpable until its own code runs (another run of the same sandbox could attach first).
      return failedStart(events, `${language} runs need their fork server in the bubblewrap sandbox, and it is not available (broken, or too many memory limits at once)`);
    }
    if (server) {
      return server.fork(
        {
          dir,
          memoryMb,
          // The whole tree's limit (where the fork server can make cgroups): the watchdog's for the process itself.
          treeMb: memoryMb + this.headroomMb,
          ...(runAs ? { runAs } : {}),
          ...(execNode ? { exec: { executable, args: runtimeArgs(language, memoryMb) } } : {}),
          ...(sandbox ? { sandbox } : {}),
        },
        events,
      );
    }
    return new SpawnedProcess({ label: language, executable, args: runtimeArgs(language, memoryMb), dir, ...(runAs ? { runAs } : {}) }, events);
  }
}
