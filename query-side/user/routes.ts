import Router from '@koa/router';
import { notFound, unauthorized } from '../../shared/errors.ts';
import { principalOf, type AppState } from '../../shared/http/AppState.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import type { SecretBox } from '../../shared/ports/SecretBox.ts';
import type { UserDoc } from '../../shared/read-models/UserDoc.ts';

/** Private user reads (spec 4.7): profile and the caller's own marketplace token. */
export const userQueryRoutes = ({ users, secrets }: { users: Collection<UserDoc>; secrets: SecretBox }): Router<AppState> => {
  const router = new Router<AppState>();

  router.get('/api/v1/user/me', async (ctx) => {
    const user = await users.get(principalOf(ctx).laui);
    if (!user) throw unauthorized();
    ctx.body = {
      laui: user.laui,
      username: user.username,
      email: user.email,
      chat_agent_laui: user.chat_agent_laui,
      chat_connection_laui: user.chat_connection_laui,
      chat_agent_name: user.chat_agent_name,
      must_change_password: user.must_change_password,
    };
  });

  router.get('/api/v1/user/marketplace_access_token/get', async (ctx) => {
    const user = await users.get(principalOf(ctx).laui);
    if (!user) throw notFound('User not found');
    ctx.body = { marketplace_access_token: user.marketplace_token ? secrets.open(user.marketplace_token) : null };
  });

  return router;
};
