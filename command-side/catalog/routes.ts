import Router from '@koa/router';
import { principalOf, type AppState } from '../../shared/http/AppState.ts';
import { requestWrites } from '../../shared/http/requestWrites.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import { lauiSchema, requireObjectBody, validateRequest } from '../../shared/validation/validateRequest.ts';
import type { CatalogDeps } from './catalogDeps.ts';
import { createItem, planItem, uniqueKeyIsFree, UNIQUE_KEY_EXISTS } from './createItem.ts';
import { deleteItem, restoreItem, updateItem, type UpdateRequest } from './changeItem.ts';
import { linkItems } from './linkItems.ts';
import { restoreRevision, type RestoreRevisionRequest } from './restoreRevision.ts';
import { bootstrapAccount } from './bootstrapAccount.ts';
import { conflict } from '../../shared/errors.ts';

export interface CatalogRoutesDeps extends CatalogDeps {
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
}

export const linkSchema = {
  type: 'object',
  properties: { parent_laui: lauiSchema, child_laui: lauiSchema },
  required: ['parent_laui', 'child_laui'],
} as const;

export const deleteSchema = {
  type: 'object',
  properties: { item_laui: lauiSchema, parent_laui: lauiSchema, hard_delete: { type: 'boolean', default: false } },
  required: ['item_laui'],
} as const;

export const updateSchema = {
  type: 'object',
  properties: { item_laui: lauiSchema, expected_version: { type: 'integer', minimum: 1 } },
  required: ['item_laui'],
} as const;

export const bootstrapSchema = {
  type: 'object',
  properties: { account_name: { type: 'string', minLength: 1 }, project_name: { type: 'string', minLength: 1, default: 'default' } },
  required: ['account_name'],
  additionalProperties: false,
} as const;

export const restoreRevisionSchema = {
  type: 'object',
  properties: { item_laui: lauiSchema, revision_laui: lauiSchema, expected_version: { type: 'integer', minimum: 1 } },
  required: ['item_laui', 'revision_laui', 'expected_version'],
  additionalProperties: false,
} as const;

export const restorePathSchema = { type: 'object', properties: { item_laui: lauiSchema }, required: ['item_laui'] } as const;

/** Catalog commands (spec 4.3) plus update, bootstrap and validate (docs/decisions.md). */
export const catalogCommandRoutes = (deps: CatalogRoutesDeps): Router<AppState> => {
  const router = new Router<AppState>({ prefix: '/api/v1/catalog' });
  const { meta, settle } = requestWrites(deps);

  router.post('/create', async (ctx) => {
    const created = await createItem(deps, principalOf(ctx), requireObjectBody(ctx.request.body), meta(ctx));
    await settle(created.position);
    ctx.body = { item_laui: created.laui };
  });

  router.post('/validate', async (ctx) => {
    const plan = await planItem(deps, principalOf(ctx), requireObjectBody(ctx.request.body));
    if (!(await uniqueKeyIsFree(deps, plan.uniqueKey))) throw conflict(UNIQUE_KEY_EXISTS);
    ctx.body = { valid: true, item_type: plan.itemType, fields: { ...plan.fields, name: plan.name } };
  });

  router.post('/create/link', async (ctx) => {
    const body = validateRequest<{ parent_laui: string; child_laui: string }>(linkSchema, requireObjectBody(ctx.request.body));
    const linked = await linkItems(deps, principalOf(ctx), body, meta(ctx));
    await settle(linked.position);
    ctx.body = { link_laui: linked.linkLaui };
  });

  router.post('/delete', async (ctx) => {
    const body = validateRequest<{ item_laui: string; parent_laui?: string; hard_delete: boolean }>(deleteSchema, requireObjectBody(ctx.request.body));
    await settle(await deleteItem(deps, principalOf(ctx), body, meta(ctx)));
    ctx.body = { message: `Item ${body.item_laui} ${body.hard_delete ? 'permanently deleted' : 'deleted'} successfully` };
  });

  router.post('/restore/:item_laui', async (ctx) => {
    const { item_laui } = validateRequest<{ item_laui: string }>(restorePathSchema, { item_laui: ctx.params.item_laui }, 'path');
    await settle(await restoreItem(deps, principalOf(ctx), item_laui, meta(ctx)));
    ctx.body = { message: `Item ${item_laui} restored successfully` };
  });

  router.post('/update', async (ctx) => {
    const body = validateRequest<UpdateRequest>(updateSchema, requireObjectBody(ctx.request.body));
    await settle(await updateItem(deps, principalOf(ctx), body, meta(ctx)));
    const item = await deps.items.get(body.item_laui);
    ctx.body = { item_laui: body.item_laui, version: item?.version ?? null };
  });

  router.post('/restore_revision', async (ctx) => {
    const body = validateRequest<RestoreRevisionRequest>(restoreRevisionSchema, requireObjectBody(ctx.request.body));
    const restored = await restoreRevision(deps, principalOf(ctx), body, meta(ctx));
    await settle(restored.position);
    ctx.body = { item_laui: body.item_laui, version: restored.version, restored_revision_laui: body.revision_laui };
  });

  router.post('/bootstrap', async (ctx) => {
    const body = validateRequest<{ account_name: string; project_name: string }>(bootstrapSchema, requireObjectBody(ctx.request.body));
    const { result, position } = await bootstrapAccount(deps, principalOf(ctx), body, meta(ctx), (at) => settle(at));
    await settle(position);
    ctx.body = result;
  });

  return router;
};
