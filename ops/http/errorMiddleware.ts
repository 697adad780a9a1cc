import type { Middleware } from 'koa';
import { AppError, RetryLaterError } from '../../shared/errors.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import type { AppState } from '../../shared/http/AppState.ts';
import { boundedDetail } from '../../shared/validation/boundedDetail.ts';

interface HttpLikeError {
  status?: unknown;
  statusCode?: unknown;
  type?: unknown;
  expose?: unknown;
  message?: unknown;
}

const statusOf = (error: HttpLikeError): number | null => {
  const status = typeof error.status === 'number' ? error.status : typeof error.statusCode === 'number' ? error.statusCode : null;
  return status !== null && status >= 400 && status < 500 ? status : null;
};

/**
 * The one place errors become responses: `{detail}` bodies with the spec's status codes.
 * Typed AppErrors render as they are; client errors from the body parser (size, syntax) become
 * 413/422; anything else is a 500 `Internal server error: <message>` and is logged.
 */
export const errorMiddleware = ({ logger }: { logger: Logger }): Middleware<AppState> =>
  async function renderErrors(ctx, next) {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        ctx.status = 404;
        ctx.body = { detail: 'Not Found' };
      } else if (ctx.status === 405 && (ctx.body === undefined || typeof ctx.body === 'string')) {
        ctx.status = 405;
        ctx.body = { detail: 'Method Not Allowed' };
      } else if (ctx.status === 501 && ctx.body === undefined) {
        // The router's answer to a method it does not know (PROPFIND, TRACE...), on any path: a 5xx
        // for a client's mistake. A path some route serves answers 405 (its Allow header kept),
        // any other 404, as for the methods it knows.
        const allowed = ctx.response.get('Allow');
        ctx.status = allowed === '' ? 404 : 405;
        ctx.body = { detail: allowed === '' ? 'Not Found' : 'Method Not Allowed' };
      }
    } catch (caught) {
      if (caught instanceof AppError) {
        ctx.status = caught.status;
        if (caught instanceof RetryLaterError) ctx.set('Retry-After', String(Math.max(1, Math.ceil(caught.retryAfterSeconds))));
        // The spec's 403 for a missing oauth_flow cookie has an empty body: detail null means none.
        if (caught.detail === null) ctx.body = '';
        // Bounded: a 422 entry echoes its input, which may be a 1 MB string or a wide object.
        else ctx.body = { detail: boundedDetail(caught.detail) };
        return;
      }
      const error = (caught ?? {}) as HttpLikeError;
      const status = statusOf(error);
      if (status === 413) {
        ctx.status = 413;
        ctx.body = { detail: 'Request body too large' };
      } else if (status !== null && (error.type === 'entity.parse.failed' || /json/i.test(String(error.message)))) {
        ctx.status = 422;
        ctx.body = {
          detail: boundedDetail([{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {}, ctx: { error: String(error.message) } }]),
        };
      } else if (status !== null) {
        ctx.status = status;
        ctx.body = { detail: error.expose === false ? 'Bad request' : boundedDetail(String(error.message)) };
      } else {
        const message = caught instanceof Error ? caught.message : String(caught);
        logger.log({
          level: 'error',
          category: 'API',
          message: `Unhandled error on ${ctx.method} ${ctx.path}: ${message}`,
          stack: caught instanceof Error ? caught.stack : undefined,
          correlation_id: ctx.state.correlationId,
        });
        ctx.status = 500;
        ctx.body = { detail: boundedDetail(`Internal server error: ${message}`) };
      }
    }
  };
