import Koa from 'koa';
import Router from '@koa/router';
import { HttpMethodEnum, koaBody } from 'koa-body';
import type { AppState } from '../../shared/http/AppState.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import { errorMiddleware } from './errorMiddleware.ts';
import { requestLog } from './requestLog.ts';

export interface AppParts {
  logger: Logger;
  bodyLimit: string;
  /** Routes that need no token (auth, logs, ai, health). */
  publicRoutes: ReadonlyArray<Router<AppState>>;
  /** Routes mounted behind `authenticate`. */
  privateRoutes: ReadonlyArray<Router<AppState>>;
  authenticate: Koa.Middleware<AppState>;
  isReady(): boolean;
}

/**
 * Assembles the facade: request log, error rendering, body parsing, readiness gate, public
 * routes, then the authentication wall and the private routes. Unknown paths fall through to
 * the error middleware's 404 `{detail: "Not Found"}`.
 */
export const createApp = (parts: AppParts): Koa<AppState> => {
  const app = new Koa<AppState>();
  app.silent = true;
  app.use(requestLog({ logger: parts.logger }));
  app.use(errorMiddleware({ logger: parts.logger }));
  app.use(async function health(ctx, next) {
    if (ctx.path === '/healthz') {
      ctx.status = parts.isReady() ? 200 : 503;
      ctx.body = { status: parts.isReady() ? 'ok' : 'starting' };
      return;
    }
    if (!parts.isReady()) {
      ctx.status = 503;
      ctx.body = { detail: 'Service is starting' };
      return;
    }
    await next();
  });
  app.use(
    koaBody({
      jsonLimit: parts.bodyLimit,
      formLimit: parts.bodyLimit,
      textLimit: parts.bodyLimit,
      multipart: false,
      jsonStrict: false,
      parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
    }),
  );
  for (const router of parts.publicRoutes) app.use(router.routes()).use(router.allowedMethods());
  const privateRouter = new Router<AppState>();
  // One allowedMethods (405/OPTIONS) for all private routes, below: one per nested router ran on
  // every request as another middleware hop.
  for (const router of parts.privateRoutes) privateRouter.use(router.routes());
  // Whether a method and path hit a private route, remembered: matching walks every private route's
  // pattern, and the router walks them again to dispatch. Bounded: paths carry LAUIs.
  const privateHits = new Map<string, boolean>();
  const isPrivate = (method: string, path: string): boolean => {
    const key = `${method} ${path}`;
    let hit = privateHits.get(key);
    if (hit === undefined) {
      hit = privateRouter.match(path, method).path.some((layer) => layer.methods.length > 0);
      if (privateHits.size >= 10_000) privateHits.clear();
      privateHits.set(key, hit);
    }
    return hit;
  };
  app.use(async function guardPrivate(ctx, next) {
    // Only requests that hit a private route meet the wall; unknown paths stay 404.
    if (isPrivate(ctx.method, ctx.path)) {
      await parts.authenticate(ctx, next);
      return;
    }
    await next();
  });
  app.use(privateRouter.routes()).use(privateRouter.allowedMethods());
  return app;
};
