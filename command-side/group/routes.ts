import Router from '@koa/router';
import { principalOf, type AppContext, type AppState } from '../../shared/http/AppState.ts';
import { requestWrites } from '../../shared/http/requestWrites.ts';
import type { Clock } from '../../shared/clock.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import { lauiSchema, requireObjectBody, validateRequest } from '../../shared/validation/validateRequest.ts';
import { accessPatchSchema, validateAccessPatch } from './validateAccessPatch.ts';
import type { GroupHandler, SaveGroup } from './handler.ts';

export interface GroupRoutesDeps {
  groups: GroupHandler;
  clock: Clock;
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
}

export const MAX_GROUP_NAME_LENGTH = 200;

export const saveGroupSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: MAX_GROUP_NAME_LENGTH },
    description: { type: 'string' },
    access_patch: accessPatchSchema,
  },
  required: ['name'],
};

export const deleteQuerySchema = {
  type: 'object',
  properties: { group_laui: lauiSchema },
  required: ['group_laui'],
};

/** Private group commands (spec 4.6). Both answer 200 without a body once the read models show the write. */
export const groupCommandRoutes = (deps: GroupRoutesDeps): Router<AppState> => {
  const router = new Router<AppState>();
  const { meta, settle } = requestWrites(deps);
  const noBody = (ctx: AppContext) => {
    ctx.status = 200;
    ctx.body = '';
  };

  router.post('/api/v1/group/create', async (ctx) => {
    const body = validateRequest<SaveGroup>(saveGroupSchema, requireObjectBody(ctx.request.body));
    validateAccessPatch(body.access_patch);
    const { laui, isAdmin } = principalOf(ctx);
    await settle(await deps.groups.save(body, { laui, isAdmin }, meta(ctx)));
    noBody(ctx);
  });

  router.delete('/api/v1/group/delete', async (ctx) => {
    const query = validateRequest<{ group_laui: string }>(deleteQuerySchema, { ...ctx.query }, 'query');
    const { laui, isAdmin } = principalOf(ctx);
    await settle(await deps.groups.delete(query.group_laui, { laui, isAdmin }, meta(ctx)));
    noBody(ctx);
  });

  return router;
};
