import Router from '@koa/router';
import { AppError } from '../../shared/errors.ts';
import { principalOf, type AppState } from '../../shared/http/AppState.ts';
import { requestWrites } from '../../shared/http/requestWrites.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import { lauiSchema, requireObjectBody, validateRequest } from '../../shared/validation/validateRequest.ts';
import { importMarketplaceItem, type ImportDeps, type ImportRequest } from './importItem.ts';

export interface MarketplaceRoutesDeps extends ImportDeps {
  logger: Logger;
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
}

export const importSchema = {
  type: 'object',
  properties: {
    // An id of the marketplace's (a LAUI when it is this service); sent URL-encoded as a query value.
    marketplace_item_id: { type: 'string', minLength: 1, maxLength: 256 },
    parent_laui: lauiSchema,
  },
  required: ['marketplace_item_id', 'parent_laui'],
} as const;

/** POST /api/v1/marketplace/import (spec 4.8). */
export const marketplaceRoutes = (deps: MarketplaceRoutesDeps): Router<AppState> => {
  const router = new Router<AppState>();
  const { meta, settle } = requestWrites(deps);

  router.post('/api/v1/marketplace/import', async (ctx) => {
    const body = validateRequest<ImportRequest>(importSchema, requireObjectBody(ctx.request.body));
    const imported = await importMarketplaceItem(deps, principalOf(ctx), body, meta(ctx)).catch((error: unknown) => {
      // The marketplace's failures are answered as typed 500s, which the error middleware does not
      // log: the operator learns here why (a reason never holds the token, see importItem.ts).
      if (error instanceof AppError && error.status >= 500) {
        deps.logger.log({
          level: 'error',
          category: 'API',
          message: `Marketplace import failed: ${String(error.detail)}`,
          marketplace_item_id: body.marketplace_item_id,
          correlation_id: ctx.state.correlationId,
        });
      }
      throw error;
    });
    await settle(imported.position);
    ctx.body = { item_laui: imported.laui, message: imported.message };
  });

  return router;
};
