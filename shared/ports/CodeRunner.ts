import type { Laui } from '../ids.ts';

/**
 * Runs user code (operators and actions) in a sandboxed OS process. Callers normalise the
 * `content`/`code` keys of code blocks before calling (spec 2.3 note).
 */
export type Language = 'python' | 'javascript';

export interface CodeBlock {
  language: Language;
  code: string;
}

export interface RunLimits {
  /** Hard wall-clock limit for the whole run (install step, load and calls; finish has its own grace). */
  timeoutMs: number;
  /** Memory budget of the user code on top of the runtime's own footprint. */
  memoryMb: number;
  /** Cap on stdout+stderr of the run and on any single protocol message. */
  maxOutputBytes: number;
}

/** What a run was doing when its code wrote a line: its install step, loading the code, or one of its functions. */
export type RunStep = 'install' | 'load' | 'initialize' | 'run' | 'check_completion' | 'finish';

/** One line a run wrote (its newline removed), or one note of the runner about the run. */
export interface RunOutputLine {
  /** The code's stdout or stderr (its install step's included); `runner`: a note of the runner. */
  stream: 'stdout' | 'stderr' | 'runner';
  step: RunStep;
  /** The line as UTF-8 text: data, never parsed. */
  text: string;
  /** Bytes cut from the end of a line longer than the per-line cap. */
  cutBytes?: number;
  /** Logged before its newline came (the flush delay passed, or the step or the run ended). */
  partial?: true;
}

/** What went over a run's cap on logged output: counted, not logged. */
export interface RunOutputDropped {
  lines: number;
  bytes: number;
  maxLines: number;
  maxBytes: number;
}

/**
 * Receives a run's output line by line while the run goes on (the service logs each line under
 * the run's session). Called on the runner's event loop; must not throw.
 */
export interface RunOutputSink {
  line(line: RunOutputLine): void;
  /** Once, when the run ends, if lines went over the run's cap. */
  dropped(summary: RunOutputDropped): void;
}

/** Captured stdout+stderr of the user code (and of the install step), capped at maxOutputBytes. */
export interface RunLog {
  logs: string;
  logsTruncated: boolean;
}

/**
 * Whose a reuse process is: the code item (operator or action) it runs and the user its runs act
 * as. A reuse process serves runs of one scope (and one language and memory limit) only: what one
 * run leaves in the interpreter (a patched `json.loads`, a global) is seen by the next runs of the
 * same code on behalf of the same user, never by another user's nor by other code.
 */
export interface ReuseScope {
  itemLaui: Laui;
  actorLaui: Laui;
}

export interface OperatorRunRequest {
  /** Null or undefined (missing codeblock) ends as `fail`. */
  codeblock: CodeBlock | null | undefined;
  bashblock?: { code: string } | null;
  connection: unknown;
  payload: unknown;
  context: Record<string, unknown>;
  limits: RunLimits;
  pollIntervalMs: number;
  /** Measured from the first check_completion call. */
  checkCompletionTimeoutMs: number;
  isCancelled(): Promise<boolean>;
  /** Called about every pollIntervalMs while the run is alive. */
  onHeartbeat?(): void;
  /** Allow a process that already served another run of the same scope (faster, less isolated). */
  reuse?: boolean;
  /** Whose process a reuse run may have; without one a reuse run gets a fresh process all the same. */
  reuseScope?: ReuseScope | null;
  /** The run's output, line by line, as it is written (bounded per run by the runner). */
  output?: RunOutputSink;
}

export type OperatorOutcome = RunLog &
  (
    | { status: 'success'; output: Record<string, unknown> }
    | { status: 'error'; output: Record<string, unknown>; message: string }
    | { status: 'timeout'; output: Record<string, unknown>; message: string }
    | { status: 'cancelled'; output: Record<string, unknown> }
    | { status: 'fail'; output: Record<string, unknown>; message: string }
  );

export type OperatorStatus = OperatorOutcome['status'];

export interface ActionRunRequest {
  codeblock: CodeBlock | null | undefined;
  bashblock?: { code: string } | null;
  connection: unknown;
  actionVariables: Record<string, unknown>;
  context: Record<string, unknown>;
  limits: RunLimits;
  /** As for operators: a process of the same scope only, and a fresh one without a scope. */
  reuse?: boolean;
  reuseScope?: ReuseScope | null;
  /** The run's output, line by line, as it is written (bounded per run by the runner). */
  output?: RunOutputSink;
}

export type ActionOutcome = RunLog &
  ({ ok: true; result: unknown } | { ok: false; message: string; kind: 'error' | 'timeout' | 'invalid' });

/**
 * One call of a code block's module-level `run` with arguments of the caller's choosing: the AI
 * module of a chat item, `run(connection, messages[, tools])` (shared/ports/AiModule.ts). Same
 * process, sandbox, limits and output capture as an action; always a fresh process (the module is
 * the chat owner's code and its callers are anyone: nothing may carry over between calls).
 */
export interface ModuleRunRequest {
  codeblock: CodeBlock | null | undefined;
  bashblock?: { code: string } | null;
  args: unknown[];
  limits: RunLimits;
  output?: RunOutputSink;
}

export interface ModuleRunner {
  runModule(request: ModuleRunRequest): Promise<ActionOutcome>;
}

/**
 * A code block's syntax checked in the sandbox without running it (`python3 -m py_compile`,
 * `node --check`): `checked: false` when no check could run here (code runs refused, no interpreter).
 */
export type SyntaxCheck =
  | { checked: true; ok: true }
  | { checked: true; ok: false; message: string; line: number | null }
  | { checked: false; reason: string };

export interface SyntaxChecker {
  checkSyntax(codeblock: CodeBlock, limits: RunLimits): Promise<SyntaxCheck>;
}

export interface CodeRunner {
  runOperator(request: OperatorRunRequest): Promise<OperatorOutcome>;
  runAction(request: ActionRunRequest): Promise<ActionOutcome>;
  /** The scopes that hold reuse processes now (idle, being reset or running), each once. */
  reuseScopes(): ReuseScope[];
  /**
   * Ends the reuse processes of every scope `match` accepts (the scope's user or item lost its
   * rights): idle ones are killed now (resolves once they are gone), running ones are killed
   * when their run ends instead of serving another. Later runs of the scope get new processes.
   */
  retire(match: (scope: ReuseScope) => boolean): Promise<void>;
  /** Kills pooled and running processes; later runs are refused. */
  close(): Promise<void>;
}
