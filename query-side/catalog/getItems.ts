import { badRequest, notFound } from '../../shared/errors.ts';
import type { Permission } from '../../shared/access/permissions.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { Collection, FindOptions } from '../../shared/read-store/ReadStore.ts';
import type { AccessControl } from '../../projections/catalog/accessControl.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { LinkDoc } from '../../shared/read-models/LinkDoc.ts';
import { decodePageToken, encodePageToken, itemView, readerOf } from './itemView.ts';
import { ItemJson } from './ItemJsonCache.ts';
import { compareByField } from '../../projections/read-store/compareByField.ts';

export interface GetQuery {
  item_laui?: Laui;
  is_root?: boolean;
  item_type?: string;
  parent_or_child?: 'parent' | 'child';
  depth: number;
  per_page: number;
  page: number;
  is_deleted: boolean;
  page_token?: string;
  item_permission?: 'view' | 'edit' | 'own' | 'delete' | 'true_parent_edit' | 'is_true_parent';
  sort_by?: string;
  filter_state?: string;
  /** The instant to read at (getItemsAsOf). */
  as_of?: string;
}

export interface GetDeps {
  items: Collection<ItemDoc>;
  links: Collection<LinkDoc>;
  access: AccessControl;
}

/** Nested children lists are not paginated; this bounds what one response can carry. */
const NESTED_LIMIT = 1000;
const PERMISSIONS: Record<string, Permission> = { view: 'VIEW', edit: 'EDIT', own: 'OWN', delete: 'DELETE' };

export const ROOT_DISALLOWED = ['item_laui', 'item_type', 'parent_or_child'] as const;

/** GET /catalog/get rules 400 of the spec, checked before anything is read. */
export const checkGetQuery = (query: GetQuery, given: ReadonlySet<string>): void => {
  if (query.item_laui === undefined && query.is_root !== true) throw badRequest('either one of item_laui or is_root must be passed');
  if (query.is_root === true) {
    const invalid = ROOT_DISALLOWED.filter((field) => given.has(field));
    if (invalid.length > 0) {
      throw badRequest({
        error_type: 'Invalid Field Combination',
        message: `is_root cannot be combined with ${invalid.join(', ')}`,
        invalid_fields_passed: invalid,
        fields_disallowed_for_root: [...ROOT_DISALLOWED],
      });
    }
  }
  const issues: string[] = [];
  if (!(query.per_page >= 0 && query.per_page <= 1000)) issues.push(`per_page must be between 0 and 1000, got ${query.per_page}`);
  if (!(query.page >= 1)) issues.push(`page must be at least 1, got ${query.page}`);
  if (query.page_token !== undefined && decodePageToken(query.page_token) === null) issues.push('page_token is not a token this service issued');
  if (issues.length > 0) {
    throw badRequest({ error_type: 'Invalid Pagination', issue: issues.join('; '), expected: { per_page: { min: 0, max: 1000 }, page: { min: 1 } } });
  }
};

type Filter = (doc: ItemDoc) => Promise<boolean>;

/**
 * The flat read (`item_laui` alone): the stored item, with no access check (docs/decisions.md), or
 * 404. Peeked, not copied: callers only read it (itemView copies what it returns).
 */
export const flatItem = async (items: Collection<ItemDoc>, laui: string): Promise<ItemDoc> => {
  const item = await items.peek(laui);
  if (!item) throw notFound(`Item not found with laui: ${laui}`);
  return item;
};

/** The LAUI of a query string that is exactly one well-formed `item_laui`: a flat read, nothing to coerce or validate. */
export const flatReadLaui = (querystring: string): Laui | null => {
  const match = /^item_laui=([0-9a-f]{24})$/.exec(querystring);
  return match ? (match[1] as Laui) : null;
};

/** `item_laui` alone: the item itself, not a listing. */
export const isFlatQuery = (query: GetQuery, given: ReadonlySet<string>): query is GetQuery & { item_laui: string } => query.item_laui !== undefined && given.size === 1;

/**
 * GET /catalog/get. `item_laui` alone returns the flat item; with any other parameter it needs VIEW
 * and traverses children (default) or ancestors, listing only what the caller can VIEW; `is_root`
 * lists the roots the caller can view.
 */
export const getItems = async (deps: GetDeps, principal: Principal, query: GetQuery, given: ReadonlySet<string>) => {
  if (!isFlatQuery(query, given)) return listItems(deps, principal, query, given);
  checkGetQuery(query, given);
  const doc = await flatItem(deps.items, query.item_laui);
  return itemView(doc, await readerOf(deps.access, principal, doc));
};

/**
 * A listing (getItems without the flat read). `json`: the cached JSON of an item's view as a VIEW
 * holder sees it (ItemJsonCache); the items without nested children are then ItemJson texts (write
 * the answer with listingJson).
 */
export const listItems = async (deps: GetDeps, principal: Principal, query: GetQuery, given: ReadonlySet<string>, json?: (doc: ItemDoc) => string) => {
  checkGetQuery(query, given);
  const principals = await deps.access.principals(principal);
  const filter = buildFilter(deps, principal, principals, query);
  // Ancestors and soft-linked children are not reached through access inheritance: each is listed
  // only when the caller can VIEW it, so that no listing names a stranger's items (true children of
  // a viewable item are viewable anyway).
  const viewable: Filter = (doc) => deps.access.can(principal, doc, 'VIEW', principals);
  const offset = query.page_token !== undefined ? (decodePageToken(query.page_token) ?? 0) : (query.page - 1) * query.per_page;
  let page: ItemDoc[];
  let hasNext: boolean;
  if (query.is_root === true) {
    const canView: Filter = async (doc) => (await filter(doc)) && (await deps.access.can(principal, doc, 'VIEW', principals));
    ({ page, hasNext } = await pageOf(deps.items, { is_root: true }, query, canView, offset, !principal.isAdmin || needsPostFilter(query)));
  } else {
    const anchor = await deps.access.require(principal, query.item_laui as Laui, 'VIEW');
    if (query.parent_or_child === 'parent') {
      const ancestors: ItemDoc[] = [];
      let parent = anchor.parent_laui;
      while (parent !== null && ancestors.length < query.depth) {
        const doc = await deps.items.get(parent);
        if (!doc) break;
        ancestors.push(doc);
        parent = doc.parent_laui;
      }
      const kept: ItemDoc[] = [];
      for (const doc of ancestors) if ((await viewable(doc)) && (await filter(doc))) kept.push(doc);
      page = kept.slice(offset, offset + query.per_page);
      hasNext = kept.length > offset + query.per_page;
    } else {
      ({ page, hasNext } = await childrenPage(deps, anchor.laui, query, filter, viewable, offset));
    }
  }
  const nested = query.parent_or_child !== 'parent' && query.is_root !== true && query.depth > 1;
  const items: Array<Record<string, unknown> | ItemJson> = [];
  for (const doc of page) {
    const reader = await readerOf(deps.access, principal, doc, principals);
    if (json && !nested && reader === 'viewer') {
      items.push(new ItemJson(json(doc)));
      continue;
    }
    const view = itemView(doc, reader);
    if (nested) view.children = await nestedChildren(deps, doc.laui, query, filter, viewable, query.depth - 1, principal, principals);
    items.push(view);
  }
  return {
    items,
    pagination: {
      current_page: query.page_token !== undefined && query.per_page > 0 ? Math.floor(offset / query.per_page) + 1 : query.page,
      per_page: query.per_page,
      has_next: hasNext,
      next_page_token: hasNext ? encodePageToken(offset + query.per_page) : null,
    },
  };
};

const buildFilter = (deps: GetDeps, principal: Principal, principals: Set<Laui>, query: GetQuery): Filter => async (doc) => {
  if (!query.is_deleted && doc.is_deleted) return false;
  if (query.item_type !== undefined && doc.item_type !== query.item_type) return false;
  if (query.filter_state !== undefined && doc.state !== query.filter_state) return false;
  const wanted = query.item_permission;
  if (wanted === undefined || wanted === 'is_true_parent') return true;
  if (wanted === 'true_parent_edit') {
    const parent = doc.parent_laui === null ? null : await deps.items.peek(doc.parent_laui);
    return parent !== null && (await deps.access.can(principal, parent, 'EDIT', principals));
  }
  return deps.access.can(principal, doc, PERMISSIONS[wanted] ?? 'VIEW', principals);
};

/** Creation order is log order (`created_seq`): what created_at order means, without ties. */
const sortOf = (query: GetQuery): FindOptions['sort'] => ({ field: query.sort_by ?? 'created_seq', direction: 'asc' });

/** Only per-item permission filters need documents in hand; the rest are index equalities. */
const needsPostFilter = (query: GetQuery): boolean => query.item_permission !== undefined && query.item_permission !== 'is_true_parent';

/**
 * Reads candidates through the index in sorted order. Without a per-item filter the store cuts the
 * page itself (skip and limit), so a deep page copies ten documents, not the thousand before it;
 * with one, candidates are filtered in batches until the page is known.
 */
const pageOf = async (collection: Collection<ItemDoc>, baseWhere: FindOptions['where'], query: GetQuery, filter: Filter, offset: number, postFilter = needsPostFilter(query)) => {
  const where = { ...baseWhere };
  if (!query.is_deleted) where.is_deleted = false;
  if (query.item_type !== undefined) where.item_type = query.item_type;
  if (query.filter_state !== undefined) where.state = query.filter_state;
  if (!postFilter) {
    // Peeked, not copied, as the flat read: itemView copies what the answer shows.
    const found = await collection.peekFind({ where, sort: sortOf(query), skip: offset, limit: query.per_page + 1 });
    return { page: found.slice(0, query.per_page), hasNext: found.length > query.per_page };
  }
  const wanted = offset + query.per_page + 1;
  const kept: ItemDoc[] = [];
  const batch = Math.max(wanted, 100);
  for (let skip = 0; kept.length < wanted; skip += batch) {
    const found = await collection.peekFind({ where, sort: sortOf(query), skip, limit: batch });
    for (const doc of found) if (await filter(doc)) kept.push(doc);
    if (found.length < batch) break;
  }
  return { page: kept.slice(offset, offset + query.per_page), hasNext: kept.length > offset + query.per_page };
};

const childrenPage = async (deps: GetDeps, parentLaui: Laui, query: GetQuery, filter: Filter, viewable: Filter, offset: number) => {
  const where: FindOptions['where'] = { parent_laui: parentLaui };
  if (query.item_type !== undefined) where.item_type = query.item_type;
  if (query.item_permission === 'is_true_parent') return pageOf(deps.items, where, query, filter, offset);
  const softLinks = await deps.links.find({ where: { parent_laui: parentLaui, true_parent: false } });
  if (softLinks.length === 0) return pageOf(deps.items, where, query, filter, offset);
  // Soft-linked children join the true ones; they are few, so the merge happens in memory.
  const linked: ItemDoc[] = [];
  for (const link of softLinks) {
    const doc = await deps.items.get(link.child_laui);
    if (doc && (await viewable(doc)) && (await filter(doc))) linked.push(doc);
  }
  const all = await pageOf(deps.items, where, { ...query, per_page: Number.MAX_SAFE_INTEGER - 1 }, filter, 0);
  const field = query.sort_by ?? 'created_seq';
  const merged = [...all.page, ...linked].sort(compareByField({ field, direction: 'asc' }));
  return { page: merged.slice(offset, offset + query.per_page), hasNext: merged.length > offset + query.per_page };
};

const nestedChildren = async (
  deps: GetDeps,
  parentLaui: Laui,
  query: GetQuery,
  filter: Filter,
  viewable: Filter,
  depth: number,
  principal: Principal,
  principals: Set<Laui>,
): Promise<unknown[]> => {
  const { page } = await childrenPage(deps, parentLaui, { ...query, per_page: NESTED_LIMIT, page_token: undefined }, filter, viewable, 0);
  const result = [];
  for (const doc of page) {
    const view = itemView(doc, await readerOf(deps.access, principal, doc, principals));
    if (depth > 1) view.children = await nestedChildren(deps, doc.laui, query, filter, viewable, depth - 1, principal, principals);
    result.push(view);
  }
  return result;
};
