import type { CodeBlock, OperatorRunRequest, RunLimits } from '../../shared/ports/CodeRunner.ts';

export const LIMITS: RunLimits = { timeoutMs: 10_000, memoryMb: 128, maxOutputBytes: 64 * 1024 };

/**
 * The connection and payload the operator snippets read (host, value); `dir` and `tag` name the
 * files their finish and polls leave, so each run's files stay apart in a shared scratch folder.
 */
export function operatorRequest(codeblock: CodeBlock, dir: string, tag: string): OperatorRunRequest {
  return {
    codeblock,
    connection: { host: 'db.example' },
    payload: { value: 21 },
    context: { dir, tag },
    limits: LIMITS,
    pollIntervalMs: 50,
    checkCompletionTimeoutMs: 5000,
    isCancelled: async () => false,
  };
}

/** For code that reads neither connection, payload nor context: the outcome depends on the code alone. */
export function bareOperatorRequest(codeblock: OperatorRunRequest['codeblock']): OperatorRunRequest {
  return {
    codeblock,
    connection: {},
    payload: {},
    context: {},
    limits: LIMITS,
    pollIntervalMs: 50,
    checkCompletionTimeoutMs: 1000,
    isCancelled: async () => false,
  };
}

/**
 * A reuse run in specs where one code item runs for one user: reuse needs a scope (without one a
 * run gets a fresh process all the same).
 */
export const REUSE: Pick<OperatorRunRequest, 'reuse' | 'reuseScope'> = { reuse: true, reuseScope: { itemLaui: 'spec-operator', actorLaui: 'spec-user' } };
