import type { Logger } from '../shared/ports/Logger.ts';

/**
 * Error codes that concern one connection or one request's stream and nothing else: a decoder fed
 * a bad or cut body (zlib `Z_*`, brotli `ERR__ERROR_*`), a peer that went away (`ECONNRESET`,
 * `EPIPE`...), a stream used after it ended, an HTTP parse error. Such an error, uncaught, means a
 * listener was missing on a stream that belonged to one client; the stream is dead, nothing shared
 * was half-updated, and dying would let that one client stop the service for everyone.
 */
const CONNECTION_LOCAL = /^(Z_[A-Z_]+|ERR__ERROR_[A-Z0-9_]+|ECONNRESET|ECONNABORTED|EPIPE|ETIMEDOUT|ERR_STREAM_(PREMATURE_CLOSE|DESTROYED|WRITE_AFTER_END)|HPE_[A-Z_]+)$/;

/** What the guard does with an uncaught exception. */
export type UncaughtVerdict = 'keep-serving' | 'exit';

/**
 * Only connection-local errors (above) are survived. Any other exception thrown where nothing
 * catches it may have stopped code half-way through a change of shared state (a map half updated,
 * a slot taken and never released, a lock held): Node's own rule applies, the process logs it and
 * exits, and its supervisor (Docker's restart policy, systemd, Kubernetes) starts it afresh from the
 * event log, which every state here is rebuilt from.
 */
export const uncaughtVerdict = (error: unknown): UncaughtVerdict => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CONNECTION_LOCAL.test(code) ? 'keep-serving' : 'exit';
};

/** The parts of `process` the guard uses (tests hand it an EventEmitter). */
export interface GuardedProcess {
  on(event: 'uncaughtException', listener: (error: Error) => void): unknown;
  on(event: 'unhandledRejection', listener: (reason: unknown) => void): unknown;
  off(event: 'uncaughtException', listener: (error: Error) => void): unknown;
  off(event: 'unhandledRejection', listener: (reason: unknown) => void): unknown;
}

export interface ProcessGuardDeps {
  process: GuardedProcess;
  logger: Logger;
  /** Ends the process (process.exit); called after the fatal line was logged and flushed. */
  exit(code: number): void;
  /** How long the fatal line may take to reach the log before the process exits anyway. */
  flushTimeoutMs?: number;
}

/** The error's message, and its stack and code as extra fields of the log line. */
const describe = (error: unknown): { message: string; extra: { stack?: string; code?: string } } => {
  if (!(error instanceof Error)) return { message: String(error), extra: {} };
  const code = (error as { code?: unknown }).code;
  return { message: error.message, extra: { ...(error.stack === undefined ? {} : { stack: error.stack }), ...(typeof code === 'string' ? { code } : {}) } };
};

/**
 * The process-level guard the composition root (ops/main.ts) installs once the service runs:
 * - an uncaught exception of a single connection's stream (uncaughtVerdict: keep-serving) is
 *   logged (`error`, category API) and the service keeps serving;
 * - any other uncaught exception is logged (`critical`), the log flushed, and the process exits
 *   with code 1, as it would without the guard, so that its supervisor restarts it;
 * - an unhandled promise rejection is logged (`error`) and the service keeps serving: the promise's
 *   async function has already unwound, as a failing request's does, and nothing waits for it
 *   (Node's default since v15 would end the process and every request in flight with it).
 * Returns the function that takes the guard off again.
 */
export const installProcessGuard = (deps: ProcessGuardDeps): (() => void) => {
  let exiting = false;
  const onException = (error: Error): void => {
    const what = describe(error);
    if (uncaughtVerdict(error) === 'keep-serving') {
      deps.logger.log({ level: 'error', category: 'API', message: `Uncaught error of one connection's stream, survived: ${what.message}`, ...what.extra });
      return;
    }
    if (exiting) return;
    exiting = true;
    deps.logger.log({ level: 'critical', category: 'API', message: `Uncaught exception, the process exits: ${what.message}`, ...what.extra });
    // stderr too: the log file may be what failed.
    console.error('Uncaught exception, the process exits:', error);
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, deps.flushTimeoutMs ?? 2000).unref());
    void Promise.race([deps.logger.flush().catch(() => undefined), timeout]).then(() => deps.exit(1));
  };
  const onRejection = (reason: unknown): void => {
    const what = describe(reason);
    deps.logger.log({ level: 'error', category: 'API', message: `Unhandled promise rejection, survived: ${what.message}`, ...what.extra });
  };
  deps.process.on('uncaughtException', onException);
  deps.process.on('unhandledRejection', onRejection);
  return () => {
    deps.process.off('uncaughtException', onException);
    deps.process.off('unhandledRejection', onRejection);
  };
};
