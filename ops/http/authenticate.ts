import type { Middleware } from 'koa';
import { AppError, forbidden, unauthorized } from '../../shared/errors.ts';
import type { AppState } from '../../shared/http/AppState.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import type { TokenSigner, TokenAudience } from '../../shared/ports/TokenSigner.ts';
import type { UserDoc } from '../../shared/read-models/UserDoc.ts';
import type { EndedSessionDoc } from '../../shared/read-models/EndedSessionDoc.ts';
import { sessionStillOpen } from '../../projections/sessions/sessionStillOpen.ts';
import { WORKER_TOKEN_PURPOSE } from '../../command-side/task/dispatchConnection.ts';

export interface AuthenticateOptions {
  tokens: TokenSigner;
  users: Collection<UserDoc>;
  /** Logged-out sessions: a token whose `sid` is here is refused. */
  endedSessions: Collection<EndedSessionDoc>;
  /** The query route also accepts the login session cookie (spec 5.2). */
  acceptSessionCookie?: boolean;
  /** Guarded public routes (publicRouteGuard) also accept the access token in the frontend_token cookie. */
  acceptAccessCookie?: boolean;
  /** Paths a user with must_change_password may still call. */
  allowedWhilePasswordChangeRequired?: ReadonlyArray<string>;
}

/**
 * A worker's dispatch token (claim purpose `worker`) carries its run's user, but may only report on
 * its own task: POST task/update and task/finish of the task it names. Anything else is 403: a token
 * read off the bus is not the user's whole account.
 */
const workerMayCall = (method: string, path: string, claims: Record<string, unknown>): boolean => {
  const match = /^\/api\/v1\/task\/(?:update|finish)\/([^/]+)\/?$/.exec(path);
  return method === 'POST' && match !== null && typeof claims.task_laui === 'string' && match[1] === claims.task_laui;
};

/**
 * The protected header JoseTokenSigner gives worker tokens, as it stands first in them: a prefix
 * test instead of decoding every request's header. Any other token, an HS256 one spelled otherwise
 * included, is verified as an access token, which accepts RS256 only.
 */
const WORKER_TOKEN_HEADER = `${Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url')}.`;

const bearer = (header: string | undefined): string | null => {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1] ?? null;
};

/**
 * Private routes: a Bearer RS256 access token naming an existing user, of a login session that has
 * not been logged out, or a run's HS256 worker token (its own task's update and finish only). Every failure is the same
 * 401 `User not authenticated` so that the answer does not tell which check failed.
 */
export const authenticate = (options: AuthenticateOptions): Middleware<AppState> => {
  const allowed = new Set(options.allowedWhilePasswordChangeRequired ?? ['/api/v1/user/me', '/api/v1/user/change-password']);
  return async function requireUser(ctx, next) {
    let token = bearer(ctx.get('authorization') || undefined);
    let audience: TokenAudience = 'access';
    if (token === null && options.acceptAccessCookie) token = ctx.cookies.get('frontend_token') ?? null;
    if (token === null && options.acceptSessionCookie) {
      token = ctx.cookies.get('session') ?? null;
      audience = 'session';
    }
    if (token === null) throw unauthorized();
    // A worker token (HS256, JoseTokenSigner) is verified as one, never as an access token.
    if (audience === 'access' && token.startsWith(WORKER_TOKEN_HEADER)) audience = 'worker';
    const verified = await options.tokens.verify(audience, token).catch(() => null);
    if (!verified?.subject) throw unauthorized();
    if (!(await sessionStillOpen(options.endedSessions, verified.claims, audience === 'session'))) throw unauthorized();
    // peek: read-only use, no copy on every request.
    const user = await options.users.peek(verified.subject);
    if (!user) throw unauthorized();
    // Worker tokens signed before they had an audience of their own are access tokens naming the purpose.
    const workerToken = audience === 'worker' || verified.claims.purpose === WORKER_TOKEN_PURPOSE;
    if (workerToken && !workerMayCall(ctx.method, ctx.path, verified.claims)) throw forbidden();
    ctx.state.principal = {
      laui: user.laui,
      username: user.username,
      isAdmin: user.is_admin,
      isAuditor: user.is_auditor === true,
      mustChangePassword: user.must_change_password,
    };
    if (user.must_change_password && !allowed.has(ctx.path)) throw new AppError(403, 'Password change required');
    await next();
  };
};
