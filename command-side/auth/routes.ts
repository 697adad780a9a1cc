import Router from '@koa/router';
import { AppError, RetryLaterError, TooManyRequestsError, badRequest, unauthorized, unprocessable } from '../../shared/errors.ts';
import { clientAddress } from '../../shared/http/clientAddress.ts';
import type { AttemptThrottle, LoginAttempt } from '../../shared/ports/AttemptThrottle.ts';
import type { AppContext, AppState } from '../../shared/http/AppState.ts';
import { requestWrites } from '../../shared/http/requestWrites.ts';
import type { Clock } from '../../shared/clock.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import type { Mailer } from '../../shared/ports/Mailer.ts';
import type { PasswordHasher } from '../../shared/ports/PasswordHasher.ts';
import { ACCESS_TOKEN_TTL_SECONDS, type TokenSigner } from '../../shared/ports/TokenSigner.ts';
import { requireObjectBody, validateRequest } from '../../shared/validation/validateRequest.ts';
import { quoted } from '../../shared/validation/boundedDetail.ts';
import type { UserDoc } from '../../shared/read-models/UserDoc.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import type { EndedSessionDoc } from '../../shared/read-models/EndedSessionDoc.ts';
import { sessionStillOpen } from '../../projections/sessions/sessionStillOpen.ts';
import { newSessionId, type AuthHandler } from './handler.ts';
import { loginPage, type LoginPageState } from './loginPage.ts';

export interface AuthRoutesDeps {
  auth: AuthHandler;
  tokens: TokenSigner;
  users: Collection<UserDoc>;
  /** Logged-out sessions (read model): their cookies and tokens are refused. */
  endedSessions: Collection<EndedSessionDoc>;
  /** Logout answers once the ended session is in the read model, so the old token fails at once. */
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
  passwords: PasswordHasher;
  mailer: Mailer;
  clock: Clock;
  emailTotp: boolean;
  /** Failed logins, per username and address (429 with Retry-After when over). */
  loginThrottle: AttemptThrottle<LoginAttempt>;
  /** Failed code and refresh-token grants, per client address. */
  tokenThrottle: AttemptThrottle<string>;
  /** Sign-in mails (email_totp), per recipient address: every mail counts. */
  mailThrottle: AttemptThrottle<string>;
  cookieSecure: boolean;
  /**
   * The absolute URL a client's redirect_uri resolves to against the service's own origin, or null
   * when it may not receive codes; see docs/decisions.md.
   */
  resolveRedirect(redirectUri: string, serviceOrigin: string): string | null;
}

const SESSION_TTL_SECONDS = 24 * 60 * 60;
const OAUTH_FLOW_TTL_SECONDS = 10 * 60;
const LOGIN_FAILED = 'Invalid username or password';
const TOO_MANY_LOGINS = 'Too many failed login attempts, try again later';
const TOO_MANY_GRANTS = 'Too many failed token requests, try again later';
const TOO_MANY_MAILS = 'Too many sign-in codes were mailed to this address, try again later';
const MAIL_NOT_SENT = 'The sign-in code could not be sent by mail: the mail server did not take it. Try again in a minute';
/** Retry-After of a sign-in mail that was not sent: the mail server's trouble is seldom over sooner. */
const MAIL_RETRY_SECONDS = 60;

export const loginSchema = {
  type: 'object',
  properties: { username: { type: 'string' }, password: { type: 'string' } },
  required: ['username', 'password'],
} as const;

export const authQuerySchema = {
  type: 'object',
  properties: { client_id: { type: 'string' }, redirect_uri: { type: 'string' }, state: { type: 'string' } },
  required: ['client_id', 'redirect_uri', 'state'],
} as const;

export const tokenSchema = {
  type: 'object',
  properties: {
    grant_type: { type: 'string', enum: ['authorization_code', 'refresh_token'] },
    // provider is quoted back in a 400: a value of another JSON type is a 422 entry instead.
    credentials: { type: 'object', properties: { provider: { type: 'string' } } },
  },
  required: ['grant_type', 'credentials'],
} as const;

export const redirectQuerySchema = { type: 'object', properties: { user_laui: { type: 'string' } }, required: ['user_laui'] } as const;

/** The origin the browser reached the service on (Koa 3's ctx.origin is not it). */
const serviceOrigin = (ctx: AppContext): string => `${ctx.protocol}://${ctx.host}`;

/** A refused attempt's username is kept in the form only when it could be one (USERNAME: 1-64 characters). */
const MAX_KEPT_USERNAME = 64;

/** The login form (GET /public/login, and a browser's refused POST /api/v1/login with the reason). */
const sendLoginPage = (ctx: AppContext, status: number, state: LoginPageState = {}): void => {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  // Never framed (clickjacking a password form): frame-ancestors, and X-Frame-Options for older browsers.
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'");
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.body = loginPage(state);
};

/** Spent on an unknown username too, so response time does not reveal which names exist. */
const DUMMY_HASH = 'scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';

export const authRoutes = (deps: AuthRoutesDeps): Router<AppState> => {
  const router = new Router<AppState>();
  const cookie = (ctx: AppContext, name: string, value: string | null, maxAgeSeconds: number, path = '/') =>
    ctx.cookies.set(name, value, {
      httpOnly: true,
      sameSite: 'lax',
      secure: deps.cookieSecure,
      path,
      maxAge: value === null ? 0 : maxAgeSeconds * 1000,
      overwrite: true,
    });
  // Public routes: the metadata names the user a route identified (or nobody), never a principal.
  const { metaFor, settle } = requestWrites(deps);
  /** The session cookie's user and session, unless it is missing, invalid, without a sid or logged out. */
  const sessionOf = async (ctx: AppContext): Promise<{ userLaui: string; sessionId: string } | null> => {
    const token = ctx.cookies.get('session');
    if (!token) return null;
    const verified = await deps.tokens.verify('session', token).catch(() => null);
    if (!verified?.subject || !(await sessionStillOpen(deps.endedSessions, verified.claims, true))) return null;
    return { userLaui: verified.subject, sessionId: String(verified.claims.sid) };
  };
  /** The address a user's sign-in code goes to, once the address's mail rate allows another mail. */
  const mailRecipient = async (userLaui: string): Promise<string> => {
    const user = await deps.users.get(userLaui);
    if (!user) throw unauthorized();
    // Addresses are case-insensitive in practice; an email is at most 254 characters: bounded keys.
    const attempt = await deps.mailThrottle.begin(user.email.toLowerCase().slice(0, 320));
    if (!attempt.allowed) throw new TooManyRequestsError(attempt.retryAfterSeconds, TOO_MANY_MAILS);
    return user.email;
  };

  const grantAccess = async (ctx: AppContext, userLaui: string, sessionId: string, refreshToken: string) => {
    const user = await deps.users.get(userLaui);
    if (!user) throw unauthorized(LOGIN_FAILED);
    const access = await deps.tokens.sign('access', userLaui, { sid: sessionId }, ACCESS_TOKEN_TTL_SECONDS);
    cookie(ctx, 'frontend_token', access, ACCESS_TOKEN_TTL_SECONDS);
    cookie(ctx, 'refresh_token', refreshToken, 30 * 24 * 60 * 60, '/api/v1');
    ctx.body = { must_change_password: user.must_change_password };
  };

  const logIn = async (ctx: AppContext): Promise<void> => {
    const form = validateRequest<{ username: string; password: string }>(loginSchema, requireObjectBody(ctx.request.body ?? {}));
    // Counted before the check, so that parallel guesses are counted before any is answered.
    const attempt = await deps.loginThrottle.begin({ username: form.username, address: clientAddress(ctx.ip) });
    if (!attempt.allowed) throw new TooManyRequestsError(attempt.retryAfterSeconds, TOO_MANY_LOGINS);
    const [user] = await deps.users.find({ where: { username_key: form.username.toLowerCase() }, limit: 1 });
    const matches = await deps.passwords.verify(form.password, user?.password_hash ?? DUMMY_HASH);
    if (!user || !matches) throw unauthorized(LOGIN_FAILED);
    await attempt.succeeded();
    const session = await deps.tokens.sign('session', user.laui, { username: user.username, sid: newSessionId() }, SESSION_TTL_SECONDS);
    cookie(ctx, 'session', session, SESSION_TTL_SECONDS);
    ctx.status = 303;
    ctx.redirect(`/api/v1/redirect-with-code?user_laui=${encodeURIComponent(user.laui)}`);
  };

  router.post('/api/v1/login', async (ctx) => {
    // A browser that posted the form gets the form again with the reason, under the same status;
    // API clients (JSON or no preference) keep the {detail} body. See docs/decisions.md.
    if (ctx.accepts('json', 'html') !== 'html') return logIn(ctx);
    try {
      await logIn(ctx);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      if (error instanceof RetryLaterError) ctx.set('Retry-After', String(error.retryAfterSeconds));
      const username = (ctx.request.body as { username?: unknown } | undefined)?.username;
      sendLoginPage(ctx, error.status, {
        error: typeof error.detail === 'string' ? error.detail : 'Enter a username and a password.',
        ...(typeof username === 'string' && username.length <= MAX_KEPT_USERNAME ? { username } : {}),
      });
    }
  });

  router.get('/api/v1/auth', async (ctx) => {
    const query = validateRequest<{ client_id: string; redirect_uri: string; state: string }>(authQuerySchema, { ...ctx.query }, 'query');
    const redirectUri = deps.resolveRedirect(query.redirect_uri, serviceOrigin(ctx));
    if (redirectUri === null) throw badRequest('Invalid argument: redirect_uri is not allowed');
    const flow = { client_id: query.client_id, redirect_uri: redirectUri, state: query.state };
    cookie(ctx, 'oauth_flow', await deps.tokens.sign('oauth_flow', null, flow, OAUTH_FLOW_TTL_SECONDS), OAUTH_FLOW_TTL_SECONDS);
    const session = await sessionOf(ctx);
    ctx.status = 303;
    ctx.redirect(session ? `/api/v1/redirect-with-code?user_laui=${encodeURIComponent(session.userLaui)}` : '/public/login');
  });

  router.get('/api/v1/redirect-with-code', async (ctx) => {
    const flowCookie = ctx.cookies.get('oauth_flow');
    const flow = flowCookie ? await deps.tokens.verify('oauth_flow', flowCookie).catch(() => null) : null;
    if (!flow) throw new AppError(403, null);
    const query = validateRequest<{ user_laui: string }>(redirectQuerySchema, { ...ctx.query }, 'query');
    // The code must go to the user who logged in, not to whoever is named in the query string.
    const session = await sessionOf(ctx);
    if (session?.userLaui !== query.user_laui) throw unauthorized();
    const { client_id, redirect_uri, state } = flow.claims as { client_id: string; redirect_uri: string; state: string };
    // Checked again: the allow-list may have changed since /auth signed the cookie.
    const checked = deps.resolveRedirect(redirect_uri, serviceOrigin(ctx));
    if (checked === null) throw badRequest('Invalid argument: redirect_uri is not allowed');
    // email_totp: the code goes to the user's own address, never into the redirect, and each mail
    // counts against that address's rate before a code is issued for it.
    const recipient = deps.emailTotp ? await mailRecipient(query.user_laui) : null;
    const code = await deps.auth.issueCode(query.user_laui, client_id, session.sessionId, metaFor(ctx, query.user_laui));
    const target = new URL(checked);
    target.searchParams.set('state', state);
    if (recipient !== null) {
      // A dead or refusing mail server is a 503 after SMTP_TIMEOUT_SECONDS at most; the code it did
      // not carry stays unknown to everyone and expires.
      await deps.mailer
        .send({ to: recipient, subject: 'Your sign-in code', text: `Your sign-in code is ${code}. It expires in 5 minutes.` })
        .catch(() => {
          throw new RetryLaterError(503, MAIL_RETRY_SECONDS, MAIL_NOT_SENT);
        });
    } else {
      target.searchParams.set('code', code);
    }
    ctx.status = 303;
    ctx.redirect(target.toString());
  });

  router.get('/api/v1/check_frontend_token_present', (ctx) => {
    if (!ctx.cookies.get('frontend_token')) {
      throw unprocessable([{ type: 'missing', loc: ['cookie', 'frontend_token'], msg: 'Field required', input: null }]);
    }
    ctx.status = 200;
    ctx.body = '';
  });

  router.post('/api/v1/token', async (ctx) => {
    const body = validateRequest<{ grant_type: 'authorization_code' | 'refresh_token'; credentials: Record<string, unknown> }>(
      tokenSchema,
      requireObjectBody(ctx.request.body),
    );
    const { credentials } = body;
    // Codes (128 bits) and refresh tokens (256 bits) cannot be guessed; the limit keeps a client
    // that tries anyway from spending the service's reads on it.
    const attemptFor = async () => {
      const attempt = await deps.tokenThrottle.begin(clientAddress(ctx.ip));
      if (!attempt.allowed) throw new TooManyRequestsError(attempt.retryAfterSeconds, TOO_MANY_GRANTS);
      return attempt;
    };
    if (body.grant_type === 'refresh_token') {
      if (typeof credentials.token_string !== 'string') {
        throw badRequest('For grant type refresh_token, token_string must be passed in credentials');
      }
      const attempt = await attemptFor();
      const rotated = await deps.auth.rotateRefreshToken(credentials.token_string, metaFor(ctx, null));
      await attempt.succeeded();
      await grantAccess(ctx, rotated.userLaui, rotated.sessionId, rotated.token);
      return;
    }
    if (typeof credentials.code !== 'string') {
      throw badRequest('For grant type authorization_code, code must be passed in credentials');
    }
    if (credentials.provider !== undefined && credentials.provider !== 'local') {
      throw badRequest(`Invalid argument: unknown provider ${quoted(credentials.provider)}`);
    }
    const attempt = await attemptFor();
    const { userLaui, sessionId } = await deps.auth.redeemCode(credentials.code, metaFor(ctx, null));
    await attempt.succeeded();
    await grantAccess(ctx, userLaui, sessionId, await deps.auth.startRefreshFamily(userLaui, sessionId, metaFor(ctx, userLaui)));
  });

  router.get('/api/v1/get-mcp-token', async (ctx) => {
    const token = ctx.cookies.get('frontend_token');
    if (!token) throw unauthorized('Unauthorized');
    const verified = await deps.tokens.verify('access', token).catch(() => null);
    if (!verified || !(await sessionStillOpen(deps.endedSessions, verified.claims, false))) throw unauthorized('Invalid token');
    ctx.body = { access_token: token };
  });

  /**
   * Logout ends every login session the request proves it holds: the session cookie's, the access
   * token's (cookie or Bearer, for clients without cookies) and the refresh token's. Only verified
   * tokens name a session, so nobody can end another's session without holding its token. The
   * answer waits until the ended sessions are in the read model the auth middleware consults.
   */
  router.post('/api/v1/logout', async (ctx) => {
    const sessions = new Map<string, string | null>();
    const refresh = ctx.cookies.get('refresh_token');
    if (refresh) {
      const family = await deps.auth.revokeRefreshToken(refresh, metaFor(ctx, null));
      if (family?.sessionId) sessions.set(family.sessionId, family.userLaui);
    }
    const tokens: Array<['session' | 'access', string | undefined]> = [
      ['session', ctx.cookies.get('session')],
      ['access', ctx.cookies.get('frontend_token')],
      ['access', /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'))?.[1]],
    ];
    for (const [audience, token] of tokens) {
      const verified = token ? await deps.tokens.verify(audience, token).catch(() => null) : null;
      if (typeof verified?.claims.sid === 'string') sessions.set(verified.claims.sid, verified.subject);
    }
    let last: Position | null = null;
    for (const [sessionId, userLaui] of sessions) {
      last = (await deps.auth.endSession(sessionId, userLaui, 'logout', metaFor(ctx, userLaui))) ?? last;
    }
    await settle(last);
    for (const name of ['frontend_token', 'oauth_flow', 'session']) cookie(ctx, name, null, 0);
    cookie(ctx, 'refresh_token', null, 0, '/api/v1');
    ctx.type = 'application/json';
    ctx.body = JSON.stringify('logged out');
  });

  router.get('/public/login', (ctx) => sendLoginPage(ctx, 200));

  return router;
};

