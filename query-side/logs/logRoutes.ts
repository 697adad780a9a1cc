import Router from '@koa/router';
import type { Middleware } from 'koa';
import type { AppContext, AppState } from '../../shared/http/AppState.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import { streamHolderOf } from '../../shared/http/StreamShares.ts';
import { listLogItems } from './listLogItems.ts';
import type { LogStreams } from './LogStreams.ts';
import { parseLogFileQuery, parseSessionContentQuery } from './logsQuery.ts';
import { readSessionPage } from './readSessionPage.ts';
import { resolveLogPath } from './resolveLogPath.ts';
import type { SseResponse } from './SseResponse.ts';
import { streamLogFile } from './streamLogFile.ts';
import { streamSession, type FollowSettings } from './streamSession.ts';

export interface LogRoutesDeps {
  /** The logs root (DATA_DIR/logs): listItems and file never serve anything outside it. */
  logsRoot: string;
  /** The file holding a session's lines, or null (ops/logging/sessionLogFile.ts, findSessionLogFile). */
  findSessionFile(sessionId: string): string | null;
  streams: LogStreams;
  /** publicRouteGuard: lets everyone through unless PUBLIC_ROUTES_REQUIRE_AUTH. */
  guard: Middleware<AppState>;
  /**
   * Sets the caller when the request carries a valid credential and lets it through anonymous
   * otherwise (optionalCaller with bad credentials anonymous): a stream counts against its user's
   * share, or its address's.
   */
  identify: Middleware<AppState>;
  follow: FollowSettings;
  logger: Logger;
}

/** The session ids the logger files lines under (JsonLinesLogger); any other names no session. */
const SESSION_ID = /^[A-Za-z0-9_.-]{1,128}$/;

/** A wildcard path parameter as text: '' when absent (the logs root). */
const pathParam = (ctx: AppContext, name: string): string => {
  const value: unknown = (ctx.params as Record<string, unknown>)[name];
  return Array.isArray(value) ? value.join('/') : typeof value === 'string' ? value : '';
};

/**
 * The read routes of spec 4.9 (prefix /api/v1/logs): listItems, file and session stream Server-Sent
 * Events (section 6), session content is JSON. Query parameters are checked before a stream starts
 * (422 in the list form); from then on every failure is the stream's `error` event, never a status.
 *
 * Paths: `folder_path` and `file_path` are relative to the logs root and may contain slashes. The
 * root itself is `listItems` with no path (`/api/v1/logs/listItems` or `/api/v1/logs/listItems/`);
 * a trailing slash on a folder is ignored.
 */
export const logRoutes = (deps: LogRoutesDeps): Router<AppState> => {
  const router = new Router<AppState>();

  /**
   * Hands the response over to an event stream (status sent) and runs `work` on it; a client past its
   * share of streams (or a full server) gets the plain 429 (503) before any stream starts.
   */
  const serve = (ctx: AppContext, what: string, work: (stream: SseResponse) => Promise<void>): void => {
    const stream = deps.streams.start(ctx.res, streamHolderOf(ctx));
    // The response is written by the stream from here on, not by Koa.
    ctx.respond = false;
    // Lines the logger still holds (it writes them in batches) are in the files before they are read.
    deps.logger
      .flush()
      .then(() => work(stream))
      .catch((error: unknown) => {
        deps.logger.log({ level: 'error', category: 'API', message: `Log stream ${what} failed: ${error instanceof Error ? error.message : String(error)}` });
        stream.finish('error', { message: 'The logs could not be read' });
      });
  };

  router.get('/api/v1/logs/listItems{/*folder_path}', deps.guard, deps.identify, (ctx) => {
    const requested = pathParam(ctx, 'folder_path').replace(/\/+$/, '');
    serve(ctx, 'listItems', async (stream) => {
      const found = await resolveLogPath(deps.logsRoot, requested, 'directory');
      if (found === null) return stream.finish('error', { message: 'Directory not found' });
      const listing = await listLogItems(found);
      await stream.send('data', JSON.stringify(listing));
      stream.finish('done', { state: 'complete' });
    });
  });

  router.get('/api/v1/logs/file{/*file_path}', deps.guard, deps.identify, (ctx) => {
    const query = parseLogFileQuery({ ...ctx.query });
    const requested = pathParam(ctx, 'file_path');
    serve(ctx, 'file', async (stream) => {
      const found = await resolveLogPath(deps.logsRoot, requested, 'file');
      if (found === null) return stream.finish('error', { message: 'File not found' });
      await streamLogFile(stream, found, query);
    });
  });

  router.get('/api/v1/logs/session/:session_id', deps.guard, deps.identify, (ctx) => {
    const sessionId = ctx.params.session_id ?? '';
    serve(ctx, 'session', async (stream) => {
      const file = SESSION_ID.test(sessionId) ? deps.findSessionFile(sessionId) : null;
      if (file === null) return stream.finish('error', { message: 'Session not found' });
      await streamSession(stream, file, sessionId, deps.follow);
    });
  });

  router.get('/api/v1/logs/session/:session_id/content', deps.guard, async (ctx) => {
    const query = parseSessionContentQuery({ ...ctx.query });
    const sessionId = ctx.params.session_id ?? '';
    // Before the file is looked for: a session's first lines may be all the logger still holds.
    await deps.logger.flush();
    const file = SESSION_ID.test(sessionId) ? deps.findSessionFile(sessionId) : null;
    ctx.set('cache-control', 'no-store');
    ctx.body = await readSessionPage(file, sessionId, query);
  });

  return router;
};
