import type { ServerResponse } from 'node:http';
import { STORED_DATA_JSON, type EventStore, type Position, type RecordedEvent, type Subscription } from '../../shared/event-store/EventStore.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import { toEnvelope } from './eventEnvelope.ts';
import { envelopeJson } from './envelopeJson.ts';
import type { EventFilter } from './eventsQuery.ts';
import { eventMatches } from './readEventsPage.ts';
import { StreamShares } from '../../shared/http/StreamShares.ts';

export interface EventStreamSettings {
  /** A comment line this often keeps proxies from closing an idle stream. */
  heartbeatMs: number;
  /**
   * A client that has not taken its buffer (over 1 MiB) this long after it filled is dropped, its
   * last event saying why: it reads slower than ~1 MiB per this period, or not at all.
   */
  slowClientMs: number;
  /** Streams open at once, and per user (EVENTS_STREAMS_MAX, EVENTS_STREAMS_PER_USER); the route needs a token, so no anonymous share. */
  shares: { total: number; perUser: number };
}

/** Frames are written in chunks of about this size: one write per event costs a syscall each. */
const FLUSH_BYTES = 64 * 1024;
/**
 * The bound of what one client may have waiting in the response's buffer: beyond it the stream
 * stops reading the log until the socket drains. Waiting at the socket's own high-water mark
 * (16 KiB) instead would make every chunk wait for a round trip to the reader.
 */
const MAX_BUFFERED_BYTES = 1024 * 1024;
/** Streams open at once by default, and per user: each holds a subscription and up to 1 MiB of buffer. */
export const DEFAULT_EVENT_STREAM_SHARES = { total: 64, perUser: 10 };
/** A dropped client gets this long to read its last event before its socket is destroyed. */
const DROP_GRACE_MS = 30_000;

/** A type name as one line (types are identifiers; the check costs less than a replace per event). */
const line = (text: string): string => (text.includes('\n') || text.includes('\r') ? text.replace(/[\r\n]/g, ' ') : text);

/** One SSE frame: `id:` the global position, `event:` the type, `data:` the envelope JSON. */
export const sseFrame = (event: RecordedEvent): string => {
  const envelope = toEnvelope(event);
  // Data served as the store decoded it (no upcast, nothing redacted: the very object) is written
  // as the text it was decoded from (STORED_DATA_JSON), not serialized again: a third of the
  // stream's own cost per event.
  const stored = envelope.data === event.data ? event[STORED_DATA_JSON] : undefined;
  // JSON escapes every newline inside strings: the data line cannot break the frame.
  return `id: ${envelope.position}\nevent: ${line(envelope.type)}\ndata: ${envelopeJson(envelope, stored)}\n\n`;
};

/**
 * The open SSE streams of GET /events/stream. Written by hand rather than with an SSE library: the
 * frame format is a few lines, and the parts that matter here (a drain-aware write the log reading
 * pauses on, a bounded buffer, a stalled client dropped with a last event saying why) would still be
 * this code's, around a library's push. The store's
 * catch-up subscription does the rest: it waits for each onEvent, so the stream reads the log no
 * faster than the client reads the socket, and at most MAX_BUFFERED_BYTES plus one chunk
 * (FLUSH_BYTES) is held per client.
 */
export class EventStreams {
  private readonly open = new Set<() => void>();
  private readonly shares: StreamShares;

  constructor(
    private readonly deps: { eventStore: EventStore; logger?: Logger; settings: EventStreamSettings },
  ) {
    this.shares = new StreamShares(deps.settings.shares, 'event streams');
  }

  get size(): number {
    return this.open.size;
  }

  /**
   * Takes a slot for the user `who` and takes over `res` (the caller has set the status line's
   * headers it wants kept). Without a slot it throws the refusal before anything is written: 429
   * `Too many open event streams` for a user holding its share, 503 for a full server.
   */
  serve(res: ServerResponse, after: Position, filter: EventFilter, who: string): void {
    const release = this.shares.admit({ user: who });
    const { eventStore, logger, settings } = this.deps;
    const matches = eventMatches(filter);
    let closed = false;
    let pending = '';
    let flushScheduled = false;
    let backlog: Promise<void> | null = null;
    let subscription: Subscription | null = null;

    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      // nginx and similar proxies buffer responses unless told not to.
      'x-accel-buffering': 'no',
    });
    res.socket?.setNoDelay(true);

    const stop = (): void => {
      if (closed) return;
      closed = true;
      clearInterval(heartbeat);
      this.open.delete(shutdown);
      release();
      // Not awaited: this may run inside onEvent, and close() waits for the running handler.
      void subscription?.close();
    };

    const drop = (reason: string, graceMs = DROP_GRACE_MS): void => {
      if (closed) return;
      stop();
      logger?.log({ level: 'warning', category: 'API', message: `Event stream dropped: ${reason}`, user: who });
      res.end(`event: dropped\ndata: ${JSON.stringify({ detail: reason })}\n\n`);
      // The last event waits in the socket's buffer: give the client a while to read it.
      setTimeout(() => res.destroy(), graceMs).unref();
    };

    const waitForDrain = (): Promise<void> =>
      new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        const timer = setTimeout(() => {
          done();
          drop(`slow client: the events buffered for this connection were not taken within ${settings.slowClientMs} ms; reconnect with Last-Event-ID to resume`);
        }, settings.slowClientMs);
        res.on('drain', done);
        res.on('close', done);
      });

    const send = (chunk: string): void => {
      if (closed || chunk === '') return;
      res.write(chunk);
      if (res.writableLength > MAX_BUFFERED_BYTES && backlog === null) {
        backlog = waitForDrain().finally(() => {
          backlog = null;
        });
      }
    };

    const flush = (): void => {
      flushScheduled = false;
      const chunk = pending;
      pending = '';
      send(chunk);
    };

    const heartbeat = setInterval(() => {
      // A full socket needs no keep-alive, and the heartbeat must not grow its buffer.
      if (backlog === null && pending === '') send(': heartbeat\n\n');
    }, settings.heartbeatMs);
    heartbeat.unref();

    // At shutdown the server waits for its connections: a client that does not read is cut soon.
    const shutdown = (): void => drop('the service is shutting down; reconnect with Last-Event-ID to resume', 1000);
    this.open.add(shutdown);
    res.on('close', stop);

    const take = (event: RecordedEvent): void => {
      if (closed || !matches(event)) return;
      pending += sseFrame(event);
      if (pending.length >= FLUSH_BYTES) flush();
      else if (!flushScheduled) {
        // Live events come one by one: sent as soon as the current batch of reads is done.
        flushScheduled = true;
        setImmediate(flush);
      }
    };

    // Tells the client the stream is open before the first event (EventSource fires `open`).
    send(': connected\n\n');
    subscription = eventStore.subscribeToAll({
      after,
      // Not async: most events need no wait, and a promise per event is a fifth of the cost.
      onEvent: (event) => (backlog === null ? take(event) : backlog.then(() => take(event))),
      onError: (error) => drop(`the event log could not be read: ${error instanceof Error ? error.message : String(error)}`),
    });
  }

  /** Ends every open stream with a last event saying why (service shutdown). */
  closeAll(): void {
    for (const shutdown of [...this.open]) shutdown();
  }
}
