import { QueryTargetError, type QueryRequest } from '../../shared/ports/QueryTarget.ts';

/**
 * One statement's clock, shared by the cloud targets: `signal` aborts when the statement timeout
 * passes or the client leaves, so every SDK call, poll and download handed it stops at once; the
 * target then cancels the statement on the service and throws `stoppedError()`.
 */
export class QueryRun {
  readonly signal: AbortSignal;
  readonly deadline: number;
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private reason: 'timeout' | 'client' | null = null;
  private readonly onClientAbort = () => this.stop('client');

  constructor(private readonly request: Pick<QueryRequest, 'statementTimeoutMs' | 'signal'>) {
    this.signal = this.controller.signal;
    this.deadline = Date.now() + request.statementTimeoutMs;
    this.timer = setTimeout(() => this.stop('timeout'), request.statementTimeoutMs);
    if (request.signal.aborted) this.stop('client');
    else request.signal.addEventListener('abort', this.onClientAbort, { once: true });
  }

  private stop(reason: 'timeout' | 'client'): void {
    if (this.reason !== null) return;
    this.reason = reason;
    this.controller.abort(new Error(reason === 'timeout' ? 'statement timeout' : 'client went away'));
  }

  get stopped(): boolean {
    return this.reason !== null;
  }

  remainingMs(): number {
    return Math.max(0, this.deadline - Date.now());
  }

  /** What to throw once stopped: `timeout` (504) for the statement timeout; the same kind when the client left (nobody reads it). */
  stoppedError(): QueryTargetError {
    return this.reason === 'client'
      ? new QueryTargetError('timeout', 'The client went away; the statement was cancelled')
      : new QueryTargetError('timeout', `The statement ran past the ${Math.round(this.request.statementTimeoutMs / 1000)} s limit and was cancelled`);
  }

  /** Waits `ms`, or rejects with stoppedError() as soon as the run stops. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.stopped) return reject(this.stoppedError());
      const onAbort = () => {
        clearTimeout(timer);
        reject(this.stoppedError());
      };
      const timer = setTimeout(() => {
        this.signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      this.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * One call to the service, given the run's signal, settled as soon as the run stops even when
   * the call does not honour the signal (an SDK resolving credentials, waiting between retries).
   */
  step<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    return settleOnAbort(work(this.signal), this.signal, () => this.stoppedError());
  }

  /**
   * The first call to a service (it resolves credentials, connects and authenticates): past
   * `connectTimeoutMs` without an answer the service counts as unreachable (502), whatever the
   * SDK's own retries were doing. `work` gets a signal that aborts on either clock.
   */
  async firstContact<T>(connectTimeoutMs: number, service: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const contact = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      contact.abort(new Error('connect timeout'));
    }, connectTimeoutMs);
    const forward = () => contact.abort(this.signal.reason);
    if (this.stopped) forward();
    else this.signal.addEventListener('abort', forward, { once: true });
    try {
      return await settleOnAbort(work(contact.signal), contact.signal, () => new Error('aborted'));
    } catch (error) {
      if (this.stopped) throw this.stoppedError();
      if (timedOut) throw new QueryTargetError('unreachable', `${service} did not answer within ${Math.round(connectTimeoutMs / 1000)} s`);
      throw error;
    } finally {
      clearTimeout(timer);
      this.signal.removeEventListener('abort', forward);
    }
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.request.signal.removeEventListener('abort', this.onClientAbort);
  }
}

/** `promise`, or a rejection with `error()` as soon as `signal` aborts (the promise's own outcome is then ignored). */
const settleOnAbort = <T>(promise: Promise<T>, signal: AbortSignal, error: () => Error): Promise<T> => {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(error());
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(error());
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (reason: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(reason);
      },
    );
  });
};

/** Polling intervals: quick at first (most inspection queries finish in a second), then every second. */
export const pollDelays = function* (firstMs = 100, maxMs = 1000): Generator<number, never> {
  let delay = firstMs;
  for (;;) {
    yield delay;
    delay = Math.min(maxMs, delay * 2);
  }
};

/** Cancelling after a timeout gets this long on its own clock (the statement's is spent). */
export const CANCEL_TIMEOUT_MS = 5000;

/** Error messages from services can carry the whole statement; 2,000 characters are enough to act on. */
export const shortMessage = (text: string): string => (text.length > 2000 ? `${text.slice(0, 2000)}…` : text);
