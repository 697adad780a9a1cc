import type { ServerResponse } from 'node:http';
import { StreamShares, type StreamHolder, type StreamShareSettings } from '../../shared/http/StreamShares.ts';
import { SseResponse } from './SseResponse.ts';

/**
 * How the streams of the logs routes are shared (LOG_STREAMS_*). The routes are public by default
 * (spec 5.1), and each open stream holds a file handle, and a followed session also a watcher and
 * timers: the total keeps a client that opens streams in a loop from exhausting file descriptors,
 * the shares keep one client (or all anonymous ones) from taking every slot.
 */
export const DEFAULT_LOG_STREAM_SHARES: StreamShareSettings = { total: 256, perUser: 16, anonymous: { perAddress: 8, total: 192 } };

const STATUS = JSON.stringify({ state: 'processing' });

/** The open SSE streams of the logs routes: shared out per client, and ended together at shutdown. */
export class LogStreams {
  private readonly open = new Set<SseResponse>();
  private readonly shares: StreamShares;

  constructor(settings: StreamShareSettings = DEFAULT_LOG_STREAM_SHARES) {
    this.shares = new StreamShares(settings, 'log streams');
  }

  /** Streams open now (tests check that a client that left freed its stream). */
  get size(): number {
    return this.open.size;
  }

  /**
   * Takes a slot for `holder` and takes over `res` as an event stream, sending the first event,
   * `status` (spec 6: all streams, first). Without a slot it throws the refusal (429 for a client
   * holding its share, 503 for a full server) before anything is written: the route answers it as a
   * plain `{detail}` error, which EventSource reports at once instead of reconnecting to a stream.
   */
  start(res: ServerResponse, holder: StreamHolder): SseResponse {
    const release = this.shares.admit(holder);
    const stream = new SseResponse(res);
    void stream.send('status', STATUS).then(() => stream.flush());
    this.open.add(stream);
    stream.signal.addEventListener(
      'abort',
      () => {
        this.open.delete(stream);
        release();
      },
      { once: true },
    );
    return stream;
  }

  /** Service shutdown: every open stream ends with an `error` event saying why. */
  closeAll(): void {
    for (const stream of [...this.open]) stream.finish('error', { message: 'The service is shutting down' }, 1000);
  }
}
