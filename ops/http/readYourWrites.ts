import { AsyncLocalStorage } from 'node:async_hooks';
import type Koa from 'koa';
import { badRequest } from '../../shared/errors.ts';
import type { AppendResult, EventStore, Position } from '../../shared/event-store/EventStore.ts';
import type { AppState } from '../../shared/http/AppState.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';

/** The answer header naming the log position of the request's last write. */
export const EVENT_POSITION_HEADER = 'X-Event-Position';
/** The request header asking this process's read models to have reached a position before the read. */
export const READ_AFTER_HEADER = 'X-Read-After';
/** Set to `false` on an answer that went out after the bound without the read models at the position. */
export const READ_AFTER_REACHED_HEADER = 'X-Read-After-Reached';

/** Positions written while one request is handled: the newest is what a reader elsewhere waits for. */
interface RequestWrites {
  position: Position | null;
}

/**
 * One store per process, not per service: a request belongs to exactly one service, and only appends
 * made while that request is handled (its async continuations) land in its record. Appends made
 * outside any request (workers, the scheduler, the reaper) find no record and cost one lookup.
 */
const writesOfRequest = new AsyncLocalStorage<RequestWrites>();

const record = (result: AppendResult): void => {
  const writes = writesOfRequest.getStore();
  if (writes !== undefined && (writes.position === null || result.position > writes.position)) writes.position = result.position;
};

/**
 * The event store as the service's code sees it: every append is recorded against the request it
 * was made for. Wrapping the store rather than each route means no write can be missed: a route
 * written later, a login's session event, a marketplace install all answer with their position.
 * `appendAtomically` is kept absent when the store has none (callers branch on its presence).
 */
export const recordWritePositions = (store: EventStore): EventStore => {
  const atomic = store.appendAtomically?.bind(store);
  return {
    append: async (streamId, events, expected) => {
      const result = await store.append(streamId, events, expected);
      record(result);
      return result;
    },
    ...(atomic === undefined
      ? {}
      : {
          appendAtomically: async (appends) => {
            const results = await atomic(appends);
            for (const result of results) record(result);
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
    const writes: RequestWrites = { position: null };
    try {
      await writesOfRequest.run(writes, next);
    } finally {
      // Also on an error answer: a request that wrote and then failed still wrote.
      if (writes.position !== null && !ctx.headerSent) ctx.set(EVENT_POSITION_HEADER, String(writes.position));
    }
  };
