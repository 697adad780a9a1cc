import { detail, invalid, json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { lauiSchema } from '../../shared/validation/validateRequest.ts';
import { getSchema, historyQuerySchema, revisionsQuerySchema, searchSchema } from './routes.ts';

const text = { type: 'string' } as const;
const nullableLaui = { type: ['string', 'null'], pattern: lauiSchema.pattern } as const;
const roleMap = { type: 'object', additionalProperties: { type: 'string', const: 'true' } } as const;

/** An item as the catalog serves it (spec 2.1): the common fields plus its type's, credentials masked. */
export const catalogItemSchema = {
  type: 'object',
  properties: {
    laui: lauiSchema,
    item_type: text,
    name: text,
    description: { type: ['string', 'null'] },
    parent_laui: nullableLaui,
    is_root: { type: 'boolean' },
    access: objectOf({ owners: roleMap, editors: roleMap, viewers: roleMap }),
    created_at: text,
    updated_at: text,
    deleted_at: { type: ['string', 'null'] },
    created_by: nullableLaui,
    updated_by: nullableLaui,
    version: { type: 'integer' },
    pk: text,
  },
  required: ['laui', 'item_type', 'name'],
  additionalProperties: true,
} as const;

const pagination = objectOf({
  current_page: { type: 'integer' },
  per_page: { type: 'integer' },
  has_next: { type: 'boolean' },
  next_page_token: { type: ['string', 'null'] },
});

/** A link as POST /catalog/search with link_filter lists it (spec 2.1: link_laui also as laui). */
export const linkViewSchema = objectOf({
  laui: lauiSchema,
  link_laui: lauiSchema,
  parent_laui: lauiSchema,
  child_laui: lauiSchema,
  parent_type: text,
  child_type: text,
  true_parent: { type: 'boolean' },
  created_at: text,
  created_by: nullableLaui,
});

/** An item as search lists it: its `projection` may leave out any field but item_type and pk. */
const projectedItem = { type: 'object', properties: catalogItemSchema.properties, required: ['item_type'], additionalProperties: true } as const;

/** POST /catalog/search: items (item_filter, projected) or links (link_filter). */
const searchPage = objectOf({ items: { type: 'array', items: { anyOf: [projectedItem, linkViewSchema] } }, pagination });

/** GET /catalog/get beyond the flat read: items with their children (or ancestors) nested. */
const nestedItemsPage = objectOf({
  items: { type: 'array', items: { allOf: [catalogItemSchema], properties: { children: { type: 'array', items: { type: 'object' } } } } },
  pagination,
});

const revisionRef = objectOf({ laui: lauiSchema, item_laui: lauiSchema, version: { type: 'integer' } });

const historyEntry = objectOf(
  {
    revision: { type: 'integer' },
    event: text,
    at: text,
    user_laui: nullableLaui,
    version: { type: ['integer', 'null'] },
    changed_fields: { type: 'array', items: text },
    changes: { type: 'object' },
    imported_from: { type: 'object' },
  },
  ['changes', 'imported_from'],
);

const itemTypeEntry = objectOf({
  item_type: text,
  base: text,
  description: text,
  required: { type: 'array', items: text },
  name_pattern: { type: ['string', 'null'] },
  unique_fields: { type: 'array', items: text },
  versioned_fields: { type: 'array', items: text },
  allowed_children: { type: 'array', items: text },
  schema: { type: 'object', description: 'The JSON Schema (draft-07) a create body of this type is validated against' },
});

const notFound = detail('Item not found with laui: <laui>');

/** The OpenAPI docs of catalogQueryRoutes (spec 4.3). */
export const catalogQueryDocs: RouteDocs = {
  tag: 'Catalog',
  auth: 'bearer',
  schemas: { CatalogItem: catalogItemSchema, LinkView: linkViewSchema, Search: searchSchema },
  routes: [
    {
      method: 'GET',
      path: '/api/v1/catalog/get',
      summary: 'Read an item, its children or ancestors, or the root items',
      description:
        'item_laui alone: the item itself (flat, no access check). Otherwise (VIEW on item_laui) a page of the items the caller may VIEW, each with its children (parent_or_child child, depth levels) or its ancestors nearest first (parent). is_root=true lists the root items the caller may VIEW and cannot be combined with item_laui, item_type or parent_or_child. ' +
        'as_of (ISO 8601 time with a zone) reads the past, folded from the log: item_laui with as_of alone is the item as it was then (404 when it did not exist yet or was hard-deleted since; deleted_at set when it was deleted by then), ' +
        'and with other parameters its children as they were then (true and soft-linked, filtered and paged as above, access as the item and its ancestors granted it then). ' +
        'as_of cannot be combined with is_root or parent_or_child=parent; a malformed one is 400 Invalid argument; a future one reads as now.',
      params: { query: getSchema },
      responses: {
        200: json('The item (item_laui alone), or a page of items', { oneOf: [catalogItemSchema, nestedItemsPage] }),
        400: json('either one of item_laui or is_root must be passed, Invalid argument: <as_of problem> (strings), or an object: Invalid Field Combination, Invalid Pagination', {
          type: 'object',
          properties: { detail: { type: ['string', 'object'] } },
          required: ['detail'],
        }),
        403: detail('Access denied'),
        404: notFound,
      },
    },
    {
      method: 'GET',
      path: '/api/v1/catalog/get/item_revisions',
      summary: "An item's revisions, or one revision",
      description: "Without version: the list. With version: the item's fields as of that version. Credentials show only to a caller with VIEW.",
      params: { query: revisionsQuerySchema },
      responses: {
        200: json('The revisions, or one revision', { oneOf: [{ type: 'array', items: revisionRef }, catalogItemSchema] }),
        404: detail('Item or revision not found'),
      },
    },
    {
      method: 'GET',
      path: '/api/v1/catalog/get/item_history',
      summary: "An item's history: every change, who and when",
      description: 'Needs VIEW on the item; the tombstone of a hard-deleted item is for administrators.',
      params: { query: historyQuerySchema },
      responses: { 200: json('Oldest first', { type: 'array', items: historyEntry }), 403: detail('Access denied'), 404: notFound },
    },
    {
      method: 'POST',
      path: '/api/v1/catalog/search',
      summary: 'Search items (item_filter) or links (link_filter)',
      description: 'Exactly one of item_filter and link_filter. item_filter takes further keys to match (state, project_laui...). Only items the caller may VIEW are returned, and only links whose parent and child the caller may both VIEW.',
      body: { schema: searchSchema },
      responses: { 200: json('One page: items (item_filter; a projection keeps at least item_type and pk) or links (link_filter)', searchPage), 422: invalid('Both or neither filter, a bad page_token, a filter value that is not a scalar, or the list form of the schema') },
    },
    {
      method: 'GET',
      path: '/api/v1/catalog/item-types/supported-types',
      summary: 'The item types, their schemas, hierarchy and aliases',
      responses: { 200: json('Every registered type', objectOf({ types: { type: 'array', items: itemTypeEntry }, aliases: { type: 'object', additionalProperties: text } })) },
    },
  ],
};
