import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../../shared/ports/Logger.ts';
import type { AppState } from '../../shared/http/AppState.ts';

/**
 * Every request leaves an API line (who, what, status) and a PERFORMANCE line whose message
 * encodes `{execution_time, error}` as the spec's log entry format says. Sits outside the error
 * middleware so it sees the final status.
 */
export const requestLog = ({ logger }: { logger: Logger }): Middleware<AppState> =>
  async function logRequest(ctx, next) {
    const started = process.hrtime.bigint();
    ctx.state.correlationId = randomUUID();
    let failure: string | null = null;
    try {
      await next();
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error);
      throw error;
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const status = failure === null ? ctx.status : 500;
      const route = (ctx as { _matchedRoute?: unknown })._matchedRoute;
      const operation = `${ctx.method} ${typeof route === 'string' ? route : ctx.path}`;
      const error = failure ?? (status >= 500 ? `HTTP ${status}` : null);
      logger.log({
        level: status >= 500 ? 'error' : status >= 400 ? 'warning' : 'info',
        category: 'API',
        message: `${ctx.method} ${ctx.path} ${status}`,
        method: ctx.method,
        path: ctx.path,
        status,
        user_laui: ctx.state.principal?.laui ?? null,
        correlation_id: ctx.state.correlationId,
      });
      logger.log({
        level: error === null ? 'info' : 'error',
        category: 'PERFORMANCE',
        operation,
        message: JSON.stringify({ execution_time: Number(seconds.toFixed(6)), error }),
        correlation_id: ctx.state.correlationId,
      });
    }
  };
