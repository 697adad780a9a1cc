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

/** Captured stdout+stderr of the user code (and of the install step), capped at maxOutputBytes. */
export interface RunLog {
  logs: string;
  logsTruncated: boolean;
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
  /** Allow a process that already served another run (faster, less isolated). */
  reuse?: boolean;
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
  reuse?: boolean;
}

export type ActionOutcome = RunLog &
  ({ ok: true; result: unknown } | { ok: false; message: string; kind: 'error' | 'timeout' | 'invalid' });

export interface CodeRunner {
  runOperator(request: OperatorRunRequest): Promise<OperatorOutcome>;
  runAction(request: ActionRunRequest): Promise<ActionOutcome>;
  /** Kills pooled and running processes; later runs are refused. */
  close(): Promise<void>;
}
