import { createHash, timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import type { Middleware } from 'koa';
import { forbidden, unauthorized } from '../../shared/errors.ts';
import type { AppContext, AppState } from '../../shared/http/AppState.ts';
import type { ServiceMetrics } from './ServiceMetrics.ts';

export const METRICS_PATH = '/metrics';

export interface MetricsAccess {
  /** METRICS_TOKEN: a Bearer equal to it is let in without an account (a Prometheus scrape config). */
  token: string | null;
  /** The service's Bearer authentication: an administrator's access token is let in. */
  authenticate: Middleware<AppState>;
  /**
   * The loopback port (METRICS_PORT): only this host reaches it, so it asks for nothing unless
   * METRICS_TOKEN is set; then it asks what the main port asks.
   */
  loopback?: boolean;
}

const bearerOf = (header: string): string | null => /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] ?? null;

/** Compared as digests: equal lengths for timingSafeEqual, and no early exit that tells how much of the token matched. */
const sameSecret = (given: string, expected: string): boolean =>
  timingSafeEqual(createHash('sha256').update(given).digest(), createHash('sha256').update(expected).digest());

/**
 * Who may read the metrics: METRICS_TOKEN as Bearer, or an administrator's access token. No
 * credentials: 401 `User not authenticated`, as every private route; a valid token of a user who is
 * not an administrator: 403 `Access denied`. The figures name routes, volumes and timings of every
 * user's work: not for every account.
 */
const admitted = async (ctx: AppContext, access: MetricsAccess): Promise<void> => {
  const bearer = bearerOf(ctx.get('authorization'));
  if (access.token !== null && bearer !== null && sameSecret(bearer, access.token)) return;
  if (access.loopback && access.token === null) return;
  if (bearer === null) throw unauthorized();
  // Throws 401 for a token that does not verify (expired, logged out, unknown user).
  await access.authenticate(ctx, async () => undefined);
  if (!ctx.state.principal?.isAdmin) throw forbidden();
};

/** GET /metrics: this process's figures in the Prometheus text format (ServiceMetrics). */
export const metricsRoutes = (deps: { metrics: ServiceMetrics; access: MetricsAccess }): Router<AppState> => {
  const router = new Router<AppState>();
  router.get(METRICS_PATH, async (ctx) => {
    await admitted(ctx, deps.access);
    const { contentType, text } = await deps.metrics.exposition();
    ctx.set('cache-control', 'no-store');
    ctx.type = contentType;
    ctx.body = text;
  });
  return router;
};
