import type Koa from 'koa';
import { badRequest } from '../../shared/errors.ts';
import type { AppendResult, EventStore, Position } from '../../shared/event-store/EventStore.ts';
import type { EventToAppend } from '../../shared/events.ts';
import type { AppState } from '../../shared/http/AppState.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';

/** The answer header naming the log position of the request's last write. */
export const EVENT_POSITION_HEADER = 'X-Event-Position';
/** The request header asking this process's read models to have reached a position before the read. */
export const READ_AFTER_HEADER = 'X-Read-After';
/** Set to `false` on an answer that went out after the bound without the read models at the position. */
export const READ_AFTER_REACHED_HEADER = 'X-Read-After-Reached';

/**
 * The log positions written for the requests being answered, by correlation id: every event a
 * request causes is stamped with the request's id (shared/http/requestWrites.ts), so the store's
 * appends name the request they were made for. Only ids of requests in flight are kept (`watch` at
 * the start, `take` at the end), so appends outside any request (workers, the scheduler, the
 * reaper) leave nothing behind. Not AsyncLocalStorage: on Node 20 it turns on promise hooks, which
 * cost every promise of the service about 3% of the event loop under task load.
 */
export class WritePositions {
  private readonly inFlight = new Map<string, Position | null>();

  watch(correlationId: string): void {
    this.inFlight.set(correlationId, null);
  }

  /** The newest position written for the request, and forgets it. */
  take(correlationId: string): Position | null {
    const position = this.inFlight.get(correlationId) ?? null;
    this.inFlight.delete(correlationId);
    return position;
  }

  record(events: ReadonlyArray<EventToAppend>, result: AppendResult): void {
    if (this.inFlight.size === 0) return;
    // The events of one append are one command's: they carry one correlation id.
    const id = events[0]?.metadata.correlation_id;
    if (id === undefined || !this.inFlight.has(id)) return;
    const known = this.inFlight.get(id) ?? null;
    if (known === null || result.position > known) this.inFlight.set(id, result.position);
  }
}

/**
 * The event store as the service's code sees it: every append is recorded against the request it
 * was made for. Wrapping the store rather than each route means no write can be missed: a route
 * written later, a login's session event, a marketplace install all answer with their position.
 * `appendAtomically` is kept absent when the store has none (callers branch on its presence).
 */
export const recordWritePositions = (store: EventStore, positions: WritePositions): EventStore => {
  const atomic = store.appendAtomically?.bind(store);
  return {
    append: async (streamId, events, expected) => {
      const result = await store.append(streamId, events, expected);
      positions.record(events, result);
      return result;
    },
    ...(atomic === undefined
      ? {}
      : {
          appendAtomically: async (appends) => {
            const results = await atomic(appends);
            appends.forEach((append, index) => {
              const result = results[index];
              if (result !== undefined) positions.record(append.events, result);
            });
            return results;
          },
        }),
    readStream: (streamId, options) => store.readStream(streamId, options),
    readAll: (options) => store.readAll(options),
    subscribeToAll: (options) => store.subscribeToAll(options),
    headPosition: () => store.headPosition(),
    close: () => store.close(),
  };
};

/** Positions are the store's integers; anything else in the header is the client's mistake. */
const POSITION = /^\d{1,19}$/;

export const parseReadAfter = (text: string): Position => {
  const trimmed = text.trim();
  if (!POSITION.test(trimmed)) throw badRequest(`${READ_AFTER_HEADER} must be a log position (a non-negative integer, as in ${EVENT_POSITION_HEADER}), got "${trimmed.slice(0, 40)}"`);
  return BigInt(trimmed);
};

export interface ReadYourWritesDeps {
  readModels: ReadModelProgress;
  timeoutMs: number;
  /** The same recorder the service's event store writes through (recordWritePositions). */
  positions: WritePositions;
}

/**
 * Read your writes across processes. A write answers `X-Event-Position: <position>`; a request with
 * `X-Read-After: <position>` is held until this process's read models have applied that position,
 * for at most READ_YOUR_WRITES_TIMEOUT_MS. After the bound it is served anyway, marked
 * `X-Read-After-Reached: false`: the same rule as a write's own wait, so that a lagging projector
 * slows clients down rather than failing every read (docs/decisions.md, "Read your writes").
 */
export const readYourWrites = (deps: ReadYourWritesDeps): Koa.Middleware<AppState> =>
  async function readYourWritesMiddleware(ctx, next) {
    const readAfter = ctx.get(READ_AFTER_HEADER);
    if (readAfter !== '') {
      const position = parseReadAfter(readAfter);
      if (!(await deps.readModels.waitFor(position, deps.timeoutMs))) ctx.set(READ_AFTER_REACHED_HEADER, 'false');
    }
    const id = ctx.state.correlationId;
    deps.positions.watch(id);
    try {
      await next();
    } finally {
      // Also on an error answer: a request that wrote and then failed still wrote.
      const position = deps.positions.take(id);
      if (position !== null && !ctx.headerSent) ctx.set(EVENT_POSITION_HEADER, String(position));
    }
  };
