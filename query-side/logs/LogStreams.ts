import type { ServerResponse } from 'node:http';
import { SseResponse } from './SseResponse.ts';

/**
 * Streams of the logs routes open at once, all clients together. The routes are public by default
 * (spec 5.1), and each open stream holds a file handle, and a followed session also a watcher and
 * timers: the bound keeps a client that opens streams in a loop from exhausting file descriptors.
 */
export const MAX_OPEN_LOG_STREAMS = 256;

const STATUS = JSON.stringify({ state: 'processing' });

/** The open SSE streams of the logs routes: counted, bounded, and ended together at shutdown. */
export class LogStreams {
  private readonly open = new Set<SseResponse>();

  constructor(private readonly max = MAX_OPEN_LOG_STREAMS) {}

  /** Streams open now (tests check that a client that left freed its stream). */
  get size(): number {
    return this.open.size;
  }

  /**
   * Takes over `res` as an event stream and sends the first event, `status` (spec 6: all streams,
   * first). At the bound it ends the stream with the `error` event at once (the spec's routes answer
   * their failures as events) and returns null.
   */
  start(res: ServerResponse): SseResponse | null {
    const stream = new SseResponse(res);
    void stream.send('status', STATUS).then(() => stream.flush());
    if (this.open.size >= this.max) {
      stream.finish('error', { message: 'Too many open log streams; try again later' });
      return null;
    }
    this.open.add(stream);
    stream.signal.addEventListener('abort', () => this.open.delete(stream), { once: true });
    return stream;
  }

  /** Service shutdown: every open stream ends with an `error` event saying why. */
  closeAll(): void {
    for (const stream of [...this.open]) stream.finish('error', { message: 'The service is shutting down' }, 1000);
  }
}
