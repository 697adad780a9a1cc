import { QueryTargetError } from '../../shared/ports/QueryTarget.ts';

/**
 * The clock and the client of one query on a relational target: the connect phase has its own
 * limit (connectTimeoutMs, then 502), the statement phase its own (statementTimeoutMs, then 504),
 * and the caller may leave at any time (the signal). When any of these ends the query, `stop` runs
 * once (close the socket, cancel the statement server-side) and every call awaited through `race`
 * fails at once with the watch's reason, whether or not the driver ever reports the closed socket.
 */
export class QueryWatch {
  private timer: NodeJS.Timeout | undefined;
  private ended: QueryTargetError | null = null;
  private readonly stopped: Promise<never>;
  private rejectStopped: (error: QueryTargetError) => void = () => undefined;
  private readonly onAbort = () => this.end(new QueryTargetError('unreachable', 'The client closed the request'));

  constructor(
    private readonly signal: AbortSignal,
    private readonly stop: (reason: 'connect' | 'statement' | 'abort') => void,
  ) {
    this.stopped = new Promise<never>((_, reject) => {
      this.rejectStopped = reject;
    });
    this.stopped.catch(() => undefined);
    if (signal.aborted) this.end(new QueryTargetError('unreachable', 'The client closed the request'));
    else signal.addEventListener('abort', this.onAbort, { once: true });
  }

  /** `work`, unless the watch ends the query first: then its reason. A late failure of `work` is ignored. */
  race<T>(work: Promise<T>): Promise<T> {
    work.catch(() => undefined);
    return Promise.race([work, this.stopped]);
  }

  /** Why the watch ended the query (timeout, client gone), or null while it has not. */
  get failure(): QueryTargetError | null {
    return this.ended;
  }

  /** The connect phase: past `ms`, 502 naming the limit. */
  connecting(ms: number): void {
    this.arm(ms, new QueryTargetError('unreachable', `Could not connect to the target within ${durationText(ms)}`), 'connect');
  }

  /** The statement phase: past `ms`, 504 naming `limitMs` (the setting; `ms` may add a grace for the server's own timeout). */
  running(ms: number, limitMs = ms): void {
    this.arm(ms, new QueryTargetError('timeout', `The query exceeded ${durationText(limitMs)}`), 'statement');
  }

  /** Ends the query with `error` (the connection broke under the driver): stop runs as for a statement timeout. */
  fail(error: QueryTargetError): void {
    this.end(error, 'statement');
  }

  /** Throws the watch's own failure if it ended the query. */
  check(): void {
    if (this.ended) throw this.ended;
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.signal.removeEventListener('abort', this.onAbort);
  }

  private arm(ms: number, error: QueryTargetError, reason: 'connect' | 'statement'): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.end(error, reason), ms);
  }

  private end(error: QueryTargetError, reason: 'connect' | 'statement' | 'abort' = 'abort'): void {
    if (this.ended) return;
    this.ended = error;
    clearTimeout(this.timer);
    this.rejectStopped(error);
    this.stop(reason);
  }
}

/** `2 minutes`, `1.5 s`: a limit as the messages name it. */
export const durationText = (ms: number): string => (ms % 60_000 === 0 && ms >= 60_000 ? `${ms / 60_000} minute${ms === 60_000 ? '' : 's'}` : `${Number((ms / 1000).toFixed(3))} s`);
