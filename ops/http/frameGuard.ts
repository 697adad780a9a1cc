import type { Middleware } from 'koa';
import type { AppState } from '../../shared/http/AppState.ts';

/** The CSP directive that forbids every framing of a page (CSP level 2; X-Frame-Options for older browsers). */
export const NO_FRAMING = "frame-ancestors 'none'";

/**
 * No HTML answer of the service may be framed by another site: a framed login page or console is
 * clickjacking's way to a user's credentials or clicks. The pages (public login, console, API
 * reference) set their own Content-Security-Policy with `frame-ancestors 'none'`; this guard covers
 * every other HTML answer as well (Koa's redirect bodies, a page added later, one whose policy
 * forgot it): `X-Frame-Options: DENY`, and `frame-ancestors 'none'` added to the response's policy
 * (or as the policy when it has none). Streams that wrote their own head (SSE) are left alone.
 */
export const frameGuard = (): Middleware<AppState> =>
  async function forbidFraming(ctx, next) {
    try {
      await next();
    } finally {
      if (!ctx.headerSent && ctx.response.type === 'text/html') {
        ctx.set('X-Frame-Options', 'DENY');
        // Koa's get() answers undefined for a header that is not set, whatever its type says.
        const set: unknown = ctx.response.get('Content-Security-Policy');
        const policy = typeof set === 'string' ? set : '';
        if (policy === '') ctx.set('Content-Security-Policy', NO_FRAMING);
        else if (!/(^|;)\s*frame-ancestors\s/i.test(policy)) ctx.set('Content-Security-Policy', `${policy}; ${NO_FRAMING}`);
      }
    }
  };
