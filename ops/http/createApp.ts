import Koa from 'koa';
import Router from '@koa/router';
import type { AppState } from '../../shared/http/AppState.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import { bodyParser } from './bodyParser.ts';
import { errorMiddleware } from './errorMiddleware.ts';
import { frameGuard } from './frameGuard.ts';
import { readYourWrites, type ReadYourWritesDeps } from './readYourWrites.ts';
import { requestLog } from './requestLog.ts';
import { requestTimer } from './requestTimer.ts';
import type { RequestObservation } from '../metrics/ServiceMetrics.ts';

export interface AppParts {
  logger: Logger;
  bodyLimit: string;
  /** Routes that need no token (auth, logs, ai, health). */
  publicRoutes: ReadonlyArray<Router<AppState>>;
  /** Routes mounted behind `authenticate`. */
  privateRoutes: ReadonlyArray<Router<AppState>>;
  authenticate: Koa.Middleware<AppState>;
  /**
   * Routers whose routes answer a refused body themselves (from ctx.state.bodyError) rather than
   * with the app's 422/413 `{detail}`: POST /logs/query, whose failures are all HTTP 200 `{error}`.
   */
  bodyErrorRoutes?: ReadonlyArray<Router<AppState>>;
  isReady(): boolean;
  /** The process's role (ops/roles.ts), told by /healthz so that an orchestrator can tell processes apart. */
  role?: string;
  /**
   * Reverse proxies in front (TRUST_PROXY_HOPS). 0: X-Forwarded-* is ignored and ctx.ip is the
   * socket's peer, so a client cannot pick the address it is throttled under. n: ctx.ip is the
   * address the outermost trusted proxy saw (the n-th X-Forwarded-For entry from the right; entries
   * further left are the client's own say).
   */
  trustProxyHops?: number;
  /** X-Event-Position on writes and X-Read-After on reads (ops/http/readYourWrites.ts); absent: neither. */
  readYourWrites?: ReadYourWritesDeps;
  /** Told every answered request: method, route template, status, seconds (the HTTP metrics). */
  observeRequest?(request: RequestObservation): void;
  /** An HTTP server span per request (ops/tracing); absent when tracing is off. It needs the correlation id requestLog sets. */
  traceRequests?: Koa.Middleware<AppState>;
}

/**
 * Assembles the facade: request log, the framing guard of HTML answers, error rendering, body parsing, readiness gate, public
 * routes, then the authentication wall and the private routes. Unknown paths fall through to
 * the error middleware's 404 `{detail: "Not Found"}`.
 */
export const createApp = (parts: AppParts): Koa<AppState> => {
  const app = new Koa<AppState>();
  app.silent = true;
  app.proxy = (parts.trustProxyHops ?? 0) > 0;
  app.maxIpsCount = parts.trustProxyHops ?? 0;
  // Outermost: the time and status as the client gets them, error pages included.
  if (parts.observeRequest) app.use(requestTimer(parts.observeRequest));
  app.use(requestLog({ logger: parts.logger }));
  if (parts.traceRequests) app.use(parts.traceRequests);
  // Outside the error middleware: it sees every answer as it will be sent, error pages included.
  app.use(frameGuard());
  app.use(errorMiddleware({ logger: parts.logger }));
  app.use(async function health(ctx, next) {
    if (ctx.path === '/healthz') {
      ctx.status = parts.isReady() ? 200 : 503;
      ctx.body = { status: parts.isReady() ? 'ok' : 'starting', ...(parts.role === undefined ? {} : { role: parts.role }) };
      return;
    }
    if (!parts.isReady()) {
      ctx.status = 503;
      ctx.body = { detail: 'Service is starting' };
      return;
    }
    await next();
  });
  // After the health check (a probe never waits on the read models), before every route.
  if (parts.readYourWrites) app.use(readYourWrites(parts.readYourWrites));
  const bodyErrorRoutes = parts.bodyErrorRoutes ?? [];
  app.use(bodyParser({ limit: parts.bodyLimit, deferErrors: (ctx) => bodyErrorRoutes.some((router) => router.match(ctx.path, ctx.method).route) }));
  // The hot path: a request that hits a private route goes straight to the one feature router that
  // owns it, behind the wall. Through koa-router's nesting it met every public router, then one
  // dispatch per feature router ahead of its own (each matching the path against all its routes),
  // then its own: a catalog read paid five dispatches where one does. Which router owns a method and
  // path is remembered; bounded, since paths carry LAUIs. A public route of the same method and path
  // keeps precedence, as it had when public routers came first.
  const privateDispatch = parts.privateRoutes.map((router) => router.routes());
  const hits = (router: Router<AppState>, method: string, path: string): boolean => router.match(path, method).route;
  const owners = new Map<string, number>();
  const ownerOf = (method: string, path: string): number => {
    const key = `${method} ${path}`;
    let owner = owners.get(key);
    if (owner === undefined) {
      owner = parts.publicRoutes.some((router) => hits(router, method, path)) ? -1 : parts.privateRoutes.findIndex((router) => hits(router, method, path));
      if (owners.size >= 10_000) owners.clear();
      owners.set(key, owner);
    }
    return owner;
  };
  app.use(async function privateRoute(ctx, next) {
    const dispatch = privateDispatch[ownerOf(ctx.method, ctx.path)];
    if (dispatch === undefined) {
      await next();
      return;
    }
    // The router's own dispatch sets params and the matched route on the context it is handed.
    await parts.authenticate(ctx, () => dispatch(ctx as Parameters<typeof dispatch>[0], next));
  });
  for (const router of parts.publicRoutes) app.use(router.routes()).use(router.allowedMethods());
  // Everything else: public routes, and private paths with a method they do not have, which get
  // their 405 (or OPTIONS answer) from one allowedMethods over all private routes, with no wall:
  // unknown paths stay 404 for anyone.
  const privateRouter = new Router<AppState>();
  for (const router of parts.privateRoutes) privateRouter.use(router.routes());
  app.use(privateRouter.routes()).use(privateRouter.allowedMethods());
  return app;
};
