import Router from '@koa/router';
import { forbidden, notFound } from '../../shared/errors.ts';
import { principalOf, type AppState } from '../../shared/http/AppState.ts';
import type { EventStore } from '../../shared/event-store/EventStore.ts';
import { itemTypesDocument } from '../../shared/item-types/itemTypes.ts';
import { lauiSchema, requireObjectBody, validateRequest } from '../../shared/validation/validateRequest.ts';
import { flatItem, flatReadLaui, getItems, isFlatQuery, listItems, type GetDeps, type GetQuery } from './getItems.ts';
import { ItemJsonCache, listingJson } from './ItemJsonCache.ts';
import type { ItemAsOfReader } from './ItemAsOfReader.ts';
import { getItemsAsOf } from './getItemsAsOf.ts';
import { searchItems, type SearchBody } from './searchItems.ts';
import { itemHistory, itemRevisions } from './itemHistory.ts';
import { clampDepth } from '../../shared/validation/jsonDepth.ts';
import { itemView, readerOf } from './itemView.ts';
import { hasSecretFields } from '../../shared/item-types/secretFields.ts';

const booleanQuery = { type: 'boolean' } as const;
const integerQuery = { type: 'integer' } as const;

export const getSchema = {
  type: 'object',
  properties: {
    item_laui: lauiSchema,
    is_root: booleanQuery,
    item_type: { type: 'string' },
    parent_or_child: { type: 'string', enum: ['parent', 'child'] },
    depth: { type: 'integer', minimum: 1, maximum: 20, default: 1 },
    per_page: { ...integerQuery, default: 10 },
    page: { ...integerQuery, default: 1 },
    is_deleted: { type: 'boolean', default: true },
    page_token: { type: 'string' },
    item_permission: { type: 'string', enum: ['view', 'edit', 'own', 'delete', 'true_parent_edit', 'is_true_parent'] },
    sort_by: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
    filter_state: { type: 'string' },
    as_of: { type: 'string', description: 'ISO 8601 time with a zone (2026-01-02T03:04:05Z): the item, or its children, as they were then' },
  },
} as const;

export const searchSchema = {
  type: 'object',
  properties: {
    item_filter: {
      type: 'object',
      properties: {
        item_laui: lauiSchema,
        is_root: { type: 'boolean' },
        item_type: { type: 'string' },
        name: { type: 'string' },
        parent_laui: lauiSchema,
        item_lauis: { type: 'array', items: lauiSchema, maxItems: 1000 },
        get_by_pk: { type: 'boolean', default: false },
      },
    },
    link_filter: {
      type: 'object',
      properties: {
        parent_laui: lauiSchema,
        child_laui: lauiSchema,
        true_parent: { type: 'boolean' },
        parent_type: { type: 'string' },
        child_type: { type: 'string' },
      },
      additionalProperties: false,
    },
    pagination: {
      type: 'object',
      properties: {
        page: { type: 'integer', minimum: 1, default: 1 },
        per_page: { type: 'integer', minimum: 0, maximum: 1000, default: 10 },
        sort_order: { type: 'string', enum: ['asc', 'desc'], default: 'asc' },
        page_token: { type: 'string' },
      },
      additionalProperties: false,
      default: {},
    },
    projection: {
      type: 'object',
      properties: { include: { type: 'array', items: { type: 'string' } }, exclude: { type: 'array', items: { type: 'string' } } },
      additionalProperties: false,
    },
  },
} as const;

export const revisionsQuerySchema = { type: 'object', properties: { item_laui: lauiSchema, version: { type: 'integer', minimum: 1 } }, required: ['item_laui'] } as const;
export const historyQuerySchema = { type: 'object', properties: { item_laui: lauiSchema }, required: ['item_laui'] } as const;

/** Query strings arrive as text: turn the typed parameters into booleans and integers first. */
const coerceQuery = (raw: Record<string, unknown>, booleans: string[], integers: string[]): Record<string, unknown> => {
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const text = Array.isArray(value) ? value.at(-1) : value;
    if (booleans.includes(key) && (text === 'true' || text === 'false')) result[key] = text === 'true';
    else if (integers.includes(key) && typeof text === 'string' && /^-?\d+$/.test(text)) result[key] = Number(text);
    else result[key] = text;
  }
  return result;
};

/** Catalog reads (spec 4.3) plus item history for auditors. */
export const catalogQueryRoutes = (deps: GetDeps & { eventStore: EventStore; asOf: ItemAsOfReader }): Router<AppState> => {
  const router = new Router<AppState>({ prefix: '/api/v1/catalog' });

  // Enough for the items a busy client set reads or lists over and over: tens of MiB at most (a
  // task's view is a few KB).
  const itemJson = new ItemJsonCache(10_000);
  // Item folds for as_of reads (snapshots every 100 events, kept in DATA_DIR): the composition root's.
  const { asOf } = deps;
  router.get('/get', async (ctx) => {
    // The most frequent read, by far: one item by its LAUI. Such a query string is valid as it
    // stands, so it skips parsing, coercion and the schema, and its JSON is cached per document.
    // Any other spelling (more parameters, percent-encoding, a bad LAUI) takes the general path.
    const flat = flatReadLaui(ctx.querystring);
    if (flat !== null) {
      const doc = await flatItem(deps.items, flat);
      // The cached JSON is the one every caller may see; credentials show more to VIEW holders only.
      const stranger = hasSecretFields(doc.item_type) && (await readerOf(deps.access, principalOf(ctx), doc)) === 'stranger';
      ctx.type = 'application/json';
      ctx.body = stranger ? JSON.stringify(itemView(doc, 'stranger')) : itemJson.json(doc);
      return;
    }
    const raw = coerceQuery(ctx.query, ['is_root', 'is_deleted'], ['depth', 'per_page', 'page']);
    const given = new Set(Object.keys(raw));
    const query = validateRequest<GetQuery>(getSchema, raw, 'query');
    const { as_of } = query;
    if (as_of !== undefined) {
      ctx.body = await getItemsAsOf({ ...deps, asOf }, principalOf(ctx), { ...query, as_of }, given);
      return;
    }
    if (isFlatQuery(query, given)) {
      ctx.body = await getItems(deps, principalOf(ctx), query, given);
      return;
    }
    // A listing: its items are written from their cached JSON (the flat read's cache).
    ctx.type = 'application/json';
    ctx.body = listingJson(await listItems(deps, principalOf(ctx), query, given, (doc) => itemJson.json(doc)));
  });

  router.get('/get/item_revisions', async (ctx) => {
    const query = validateRequest<{ item_laui: string; version?: number }>(revisionsQuerySchema, coerceQuery(ctx.query, [], ['version']), 'query');
    // No route-level check (spec); a revision of an item with credentials shows their non-secret
    // fields only to a caller with VIEW on the item. Read from the log itself, which may predate the
    // body parser's depth bound: clamped.
    const item = await deps.items.peek(query.item_laui);
    const reader = item ? await readerOf(deps.access, principalOf(ctx), item) : principalOf(ctx).isAdmin ? 'viewer' : 'stranger';
    ctx.body = clampDepth(await itemRevisions(deps.eventStore, query.item_laui, query.version, reader));
  });

  router.get('/get/item_history', async (ctx) => {
    const query = validateRequest<{ item_laui: string }>(historyQuerySchema, coerceQuery(ctx.query, [], []), 'query');
    const principal = principalOf(ctx);
    const item = await deps.items.get(query.item_laui);
    // A hard-deleted item has no access maps left: only administrators read its tombstone.
    if (item) {
      if (!(await deps.access.can(principal, item, 'VIEW'))) throw forbidden();
    } else if (!principal.isAdmin) {
      throw notFound(`Item not found with laui: ${query.item_laui}`);
    }
    ctx.body = clampDepth(await itemHistory(deps.eventStore, query.item_laui));
  });

  router.post('/search', async (ctx) => {
    const body = validateRequest<SearchBody>(searchSchema, requireObjectBody(ctx.request.body));
    ctx.body = await searchItems(deps, principalOf(ctx), body);
  });

  router.get('/item-types/supported-types', (ctx) => {
    ctx.body = itemTypesDocument();
  });

  return router;
};
