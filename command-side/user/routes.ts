import Router from '@koa/router';
import { AppError, TooManyRequestsError, forbidden } from '../../shared/errors.ts';
import type { AttemptThrottle } from '../../shared/ports/AttemptThrottle.ts';
import { principalOf, type AppState } from '../../shared/http/AppState.ts';
import { requestWrites } from '../../shared/http/requestWrites.ts';
import type { Clock } from '../../shared/clock.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import { requireObjectBody, validateRequest } from '../../shared/validation/validateRequest.ts';
import type { UserHandler } from './handler.ts';

export interface UserRoutesDeps {
  users: UserHandler;
  /**
   * Wrong current passwords, per user: a stolen access token must not become a password oracle
   * (the password outlives the token and may open other doors).
   */
  passwordChangeThrottle: AttemptThrottle<string>;
  clock: Clock;
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
}

const stringFields = (...names: string[]) => ({
  type: 'object',
  properties: Object.fromEntries(names.map((name) => [name, { type: 'string' }])),
  required: names,
});

export const changePasswordSchema = stringFields('current_password', 'new_password');
export const marketplaceTokenSchema = stringFields('marketplace_access_token');

export const createUserSchema = {
  type: 'object',
  properties: {
    username: { type: 'string' },
    email: { type: 'string' },
    password: { type: 'string' },
    must_change_password: { type: 'boolean', default: true },
    is_admin: { type: 'boolean', default: false },
    is_auditor: { type: 'boolean', default: false },
  },
  required: ['username', 'email', 'password'],
} as const;

export const rolesSchema = {
  type: 'object',
  properties: { user_laui: { type: 'string', pattern: '^[0-9a-f]{24}$' }, is_auditor: { type: 'boolean' } },
  required: ['user_laui', 'is_auditor'],
} as const;

/** Private user commands (spec 4.7) plus admin user creation. */
export const userCommandRoutes = (deps: UserRoutesDeps): Router<AppState> => {
  const router = new Router<AppState>();
  const { meta, settle } = requestWrites(deps);

  router.post('/api/v1/user/change-password', async (ctx) => {
    const body = validateRequest<{ current_password: string; new_password: string }>(changePasswordSchema, requireObjectBody(ctx.request.body));
    const principal = principalOf(ctx);
    const attempt = await deps.passwordChangeThrottle.begin(principal.laui);
    if (!attempt.allowed) throw new TooManyRequestsError(attempt.retryAfterSeconds, 'Too many failed password changes, try again later');
    const position = await deps.users.changePassword(principal.laui, body.current_password, body.new_password, meta(ctx)).catch(async (error: unknown) => {
      // A 400 (new password too short) comes only after the current password matched: not a guess.
      if (error instanceof AppError && error.status === 400) await attempt.succeeded();
      throw error;
    });
    await attempt.succeeded();
    await settle(position);
    ctx.body = { message: 'Password changed successfully' };
  });

  router.post('/api/v1/user/marketplace_access_token/update', async (ctx) => {
    const body = validateRequest<{ marketplace_access_token: string }>(marketplaceTokenSchema, requireObjectBody(ctx.request.body));
    const principal = principalOf(ctx);
    await settle(await deps.users.updateMarketplaceToken(principal.laui, body.marketplace_access_token, meta(ctx)));
    ctx.body = { message: 'Marketplace access token updated successfully', user_id: principal.laui };
  });

  router.post('/api/v1/user/create', async (ctx) => {
    if (!principalOf(ctx).isAdmin) throw forbidden();
    const body = validateRequest<{ username: string; email: string; password: string; must_change_password: boolean; is_admin: boolean; is_auditor: boolean }>(
      createUserSchema,
      requireObjectBody(ctx.request.body),
    );
    const created = await deps.users.create(
      {
        username: body.username,
        email: body.email,
        password: body.password,
        mustChangePassword: body.must_change_password,
        isAdmin: body.is_admin,
        isAuditor: body.is_auditor,
      },
      meta(ctx),
    );
    await settle(created.position);
    ctx.body = { user_laui: created.laui };
  });

  /** Admin only: grant or withdraw the auditor role (reads the event log, GET /api/v1/events). */
  router.post('/api/v1/user/roles', async (ctx) => {
    if (!principalOf(ctx).isAdmin) throw forbidden();
    const body = validateRequest<{ user_laui: string; is_auditor: boolean }>(rolesSchema, requireObjectBody(ctx.request.body));
    const position = await deps.users.setAuditor(body.user_laui, body.is_auditor, meta(ctx));
    await settle(position);
    ctx.body = { user_laui: body.user_laui, is_auditor: body.is_auditor };
  });
  return router;
};
