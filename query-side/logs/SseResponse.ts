import type { ServerResponse } from 'node:http';

/** Frames are written in batches of about this size: one write per log line costs a syscall each. */
const FLUSH_BYTES = 64 * 1024;
/**
 * A client whose socket stays full this long is cut: a reader that stopped reading must not hold
 * a file handle (and a follow's watcher) for ever.
 */
const DRAIN_TIMEOUT_MS = 60_000;

/**
 * One Server-Sent Events response of the logs routes (spec section 6): `event:` a name, `data:`
 * one JSON object. Writes are batched and wait for the socket to drain, so a stream never holds
 * more than about FLUSH_BYTES plus the socket's buffer, however fast the file is read and however
 * slow the client. `signal` aborts the moment the client goes away (or the stream is ended), so
 * every reader can stop and free what it holds at once.
 */
export class SseResponse {
  private readonly aborter = new AbortController();
  private pending = '';

  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      // nginx and similar proxies buffer responses unless told not to.
      'x-accel-buffering': 'no',
    });
    res.socket?.setNoDelay(true);
    res.on('close', () => this.aborter.abort());
  }

  /** Aborted when the client has gone or the stream was ended. */
  get signal(): AbortSignal {
    return this.aborter.signal;
  }

  get closed(): boolean {
    return this.aborter.signal.aborted;
  }

  /**
   * Queues one event; `json` is the data object's JSON text (a log line is sent as it was
   * written, not parsed and stringified again). Resolves at once unless the batch was written to
   * a full socket: then when it drained (or the client left).
   */
  async send(event: string, json: string): Promise<void> {
    if (this.closed) return;
    // JSON text holds no raw line breaks (JSON.stringify escapes them): one data line per event.
    // A line written by something else might: re-encoded rather than let it break the frame.
    const data = json.includes('\n') || json.includes('\r') ? JSON.stringify(JSON.parse(json)) : json;
    this.pending += `event: ${event}\ndata: ${data}\n\n`;
    if (this.pending.length >= FLUSH_BYTES) await this.flush();
  }

  /** A comment line (ignored by clients): keeps proxies from closing a quiet stream. */
  async comment(text: string): Promise<void> {
    if (this.closed) return;
    this.pending += `: ${text}\n\n`;
    await this.flush();
  }

  /** Writes what is queued; waits while the socket is full. */
  async flush(): Promise<void> {
    if (this.closed || this.pending === '') return;
    const chunk = this.pending;
    this.pending = '';
    if (!this.res.write(chunk)) await this.drained();
  }

  /**
   * The last event (`done` or `error`) and the end of the response, written at once (one frame
   * needs no wait for the socket). `destroyAfterMs`: the socket is destroyed that much later if the
   * client has not taken the event by then (service shutdown, where a keep-alive connection would
   * hold the server's close).
   */
  finish(event: 'done' | 'error', data: Record<string, unknown>, destroyAfterMs?: number): void {
    if (this.closed) return;
    const chunk = `${this.pending}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    this.pending = '';
    this.res.end(chunk);
    this.aborter.abort();
    if (destroyAfterMs !== undefined) setTimeout(() => this.res.destroy(), destroyAfterMs).unref();
  }

  /** Ends the response without a last event (the client is gone, or the socket is stuck). */
  destroy(): void {
    this.aborter.abort();
    this.res.destroy();
  }

  private drained(): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.res.off('drain', done);
        this.aborter.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(() => {
        done();
        this.destroy();
      }, DRAIN_TIMEOUT_MS);
      this.res.on('drain', done);
      this.aborter.signal.addEventListener('abort', done);
    });
  }
}
