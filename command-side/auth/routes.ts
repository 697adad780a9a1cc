import Router from '@koa/router';
import { AppError, badRequest, unauthorized, unprocessable } from '../../shared/errors.ts';
import { metadataFor } from '../../shared/events.ts';
import type { AppContext, AppState } from '../../shared/http/AppState.ts';
import type { Clock } from '../../shared/clock.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import type { Mailer } from '../../shared/ports/Mailer.ts';
import type { PasswordHasher } from '../../shared/ports/PasswordHasher.ts';
import { ACCESS_TOKEN_TTL_SECONDS, type TokenSigner } from '../../shared/ports/TokenSigner.ts';
import { requireObjectBody, validateRequest } from '../../shared/validation/validateRequest.ts';
import { quoted } from '../../shared/validation/boundedDetail.ts';
import type { UserDoc } from '../../projections/users/usersProjection.ts';
import type { AuthHandler } from './handler.ts';
import { loginPage } from './loginPage.ts';

export interface AuthRoutesDeps {
  auth: AuthHandler;
  tokens: TokenSigner;
  users: Collection<UserDoc>;
  passwords: PasswordHasher;
  mailer: Mailer;
  clock: Clock;
  emailTotp: boolean;
  cookieSecure: boolean;
  /** Origins a client's redirect_uri may point at; see docs/decisions.md. */
  isAllowedRedirect(redirectUri: string): boolean;
}

const SESSION_TTL_SECONDS = 24 * 60 * 60;
const OAUTH_FLOW_TTL_SECONDS = 10 * 60;
const LOGIN_FAILED = 'Invalid username or password';

const loginSchema = {
  type: 'object',
  properties: { username: { type: 'string' }, password: { type: 'string' } },
  required: ['username', 'password'],
} as const;

const authQuerySchema = {
  type: 'object',
  properties: { client_id: { type: 'string' }, redirect_uri: { type: 'string' }, state: { type: 'string' } },
  required: ['client_id', 'redirect_uri', 'state'],
} as const;

const tokenSchema = {
  type: 'object',
  properties: {
    grant_type: { type: 'string', enum: ['authorization_code', 'refresh_token'] },
    // provider is quoted back in a 400: a value of another JSON type is a 422 entry instead.
    credentials: { type: 'object', properties: { provider: { type: 'string' } } },
  },
  required: ['grant_type', 'credentials'],
} as const;

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
  const meta = (ctx: AppContext, userLaui: string | null) => metadataFor(userLaui, deps.clock.now(), ctx.state.correlationId);
  const sessionUser = async (ctx: AppContext): Promise<string | null> => {
    const token = ctx.cookies.get('session');
    if (!token) return null;
    const verified = await deps.tokens.verify('session', token).catch(() => null);
    return verified?.subject ?? null;
  };
  const grantAccess = async (ctx: AppContext, userLaui: string, refreshToken: string) => {
    const user = await deps.users.get(userLaui);
    if (!user) throw unauthorized(LOGIN_FAILED);
    cookie(ctx, 'frontend_token', await deps.tokens.sign('access', userLaui, {}, ACCESS_TOKEN_TTL_SECONDS), ACCESS_TOKEN_TTL_SECONDS);
    cookie(ctx, 'refresh_token', refreshToken, 30 * 24 * 60 * 60, '/api/v1');
    ctx.body = { must_change_password: user.must_change_password };
  };

  router.post('/api/v1/login', async (ctx) => {
    const form = validateRequest<{ username: string; password: string }>(loginSchema, requireObjectBody(ctx.request.body ?? {}));
    const [user] = await deps.users.find({ where: { username_key: form.username.toLowerCase() }, limit: 1 });
    const matches = await deps.passwords.verify(form.password, user?.password_hash ?? DUMMY_HASH);
    if (!user || !matches) throw unauthorized(LOGIN_FAILED);
    cookie(ctx, 'session', await deps.tokens.sign('session', user.laui, { username: user.username }, SESSION_TTL_SECONDS), SESSION_TTL_SECONDS);
    ctx.status = 303;
    ctx.redirect(`/api/v1/redirect-with-code?user_laui=${encodeURIComponent(user.laui)}`);
  });

  router.get('/api/v1/auth', async (ctx) => {
    const query = validateRequest<{ client_id: string; redirect_uri: string; state: string }>(authQuerySchema, { ...ctx.query }, 'query');
    if (!deps.isAllowedRedirect(query.redirect_uri)) throw badRequest('Invalid argument: redirect_uri is not allowed');
    const flow = { client_id: query.client_id, redirect_uri: query.redirect_uri, state: query.state };
    cookie(ctx, 'oauth_flow', await deps.tokens.sign('oauth_flow', null, flow, OAUTH_FLOW_TTL_SECONDS), OAUTH_FLOW_TTL_SECONDS);
    const userLaui = await sessionUser(ctx);
    ctx.status = 303;
    ctx.redirect(userLaui ? `/api/v1/redirect-with-code?user_laui=${encodeURIComponent(userLaui)}` : '/public/login');
  });

  router.get('/api/v1/redirect-with-code', async (ctx) => {
    const flowCookie = ctx.cookies.get('oauth_flow');
    const flow = flowCookie ? await deps.tokens.verify('oauth_flow', flowCookie).catch(() => null) : null;
    if (!flow) throw new AppError(403, null);
    const query = validateRequest<{ user_laui: string }>(
      { type: 'object', properties: { user_laui: { type: 'string' } }, required: ['user_laui'] },
      { ...ctx.query },
      'query',
    );
    // The code must go to the user who logged in, not to whoever is named in the query string.
    if ((await sessionUser(ctx)) !== query.user_laui) throw unauthorized();
    const { client_id, redirect_uri, state } = flow.claims as { client_id: string; redirect_uri: string; state: string };
    const code = await deps.auth.issueCode(query.user_laui, client_id, meta(ctx, query.user_laui));
    const target = new URL(redirect_uri, `${ctx.protocol}://${ctx.host}`);
    target.searchParams.set('state', state);
    if (deps.emailTotp) {
      const user = await deps.users.get(query.user_laui);
      if (!user) throw unauthorized();
      await deps.mailer.send({ to: user.email, subject: 'Your sign-in code', text: `Your sign-in code is ${code}. It expires in 5 minutes.` });
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
    if (body.grant_type === 'refresh_token') {
      if (typeof credentials.token_string !== 'string') {
        throw badRequest('For grant type refresh_token, token_string must be passed in credentials');
      }
      const rotated = await deps.auth.rotateRefreshToken(credentials.token_string, meta(ctx, null));
      await grantAccess(ctx, rotated.userLaui, rotated.token);
      return;
    }
    if (typeof credentials.code !== 'string') {
      throw badRequest('For grant type authorization_code, code must be passed in credentials');
    }
    if (credentials.provider !== undefined && credentials.provider !== 'local') {
      throw badRequest(`Invalid argument: unknown provider ${quoted(credentials.provider)}`);
    }
    const userLaui = await deps.auth.redeemCode(credentials.code, meta(ctx, null));
    await grantAccess(ctx, userLaui, await deps.auth.startRefreshFamily(userLaui, meta(ctx, userLaui)));
  });

  router.get('/api/v1/get-mcp-token', async (ctx) => {
    const token = ctx.cookies.get('frontend_token');
    if (!token) throw unauthorized('Unauthorized');
    const verified = await deps.tokens.verify('access', token).catch(() => null);
    if (!verified) throw unauthorized('Invalid token');
    ctx.body = { access_token: token };
  });

  router.post('/api/v1/logout', async (ctx) => {
    const refresh = ctx.cookies.get('refresh_token');
    if (refresh) await deps.auth.revokeRefreshToken(refresh, meta(ctx, null));
    for (const name of ['frontend_token', 'oauth_flow', 'session']) cookie(ctx, name, null, 0);
    cookie(ctx, 'refresh_token', null, 0, '/api/v1');
    ctx.type = 'application/json';
    ctx.body = JSON.stringify('logged out');
  });

  router.get('/public/login', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'");
    ctx.body = loginPage();
  });

  return router;
};

