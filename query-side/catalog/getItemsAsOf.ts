import { badRequest, forbidden, notFound } from '../../shared/errors.ts';
import { grants, type AccessMaps, type Permission } from '../../shared/access/permissions.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { hasSecretFields } from '../../shared/item-types/secretFields.ts';
import { compareByField } from '../../projections/read-store/compareByField.ts';
import { checkGetQuery, type GetDeps, type GetQuery } from './getItems.ts';
import type { ItemAsOfReader } from './ItemAsOfReader.ts';
import { decodePageToken, encodePageToken, itemView } from './itemView.ts';

/** Parent chains are short in practice; the bound stops a corrupted (cyclic) chain, as accessControl's does. */
const MAX_DEPTH = 64;
const NESTED_LIMIT = 1000;
/**
 * Children an as_of listing sorted by another field than creation order may fold: every one of them
 * must be folded to be sorted, so an unbounded folder would make one request fold its whole history
 * (a hostile user's cheap way to use the service's CPU). Creation order needs no bound (see childrenAt).
 */
export const AS_OF_SORTED_CHILDREN_LIMIT = 10_000;
const PERMISSIONS: Record<string, Permission> = { view: 'VIEW', edit: 'EDIT', own: 'OWN', delete: 'DELETE' };

/** ISO 8601 date and time with a zone: `Z` or an offset (converted to UTC); seconds and fractions optional. */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/;

/**
 * The instant of `as_of`, as the log writes times (UTC, milliseconds), or 400 `Invalid argument`.
 * A finer fraction is cut to the millisecond the log's times have (an event at .123 is at .1239).
 */
export const parseAsOf = (text: string): string => {
  const at = ISO_INSTANT.test(text) ? Date.parse(text.replace(/(\.\d{3})\d+/, '$1')) : Number.NaN;
  if (Number.isNaN(at)) throw badRequest(`Invalid argument: as_of must be an ISO 8601 time with a zone, e.g. 2026-01-02T03:04:05Z (got ${text.slice(0, 64)})`);
  return new Date(at).toISOString();
};

/** Parameters as_of cannot be combined with: it reads one item, or a folder's children. */
const AS_OF_DISALLOWED = ['is_root'] as const;

export type AsOfDeps = GetDeps & { asOf: ItemAsOfReader };

/**
 * GET /catalog/get with `as_of`: every item folded from its stream up to the instant (ItemAsOfReader),
 * and every access decision made on the access maps of the item and its true ancestors as they were
 * then. Group memberships and administrator rights are the caller's today: they are not the item's
 * history. `item_laui` (with `as_of` alone) is the flat read, unchecked as the spec's flat read is;
 * with other parameters it lists the children (true and soft-linked) the caller could VIEW then.
 */
export const getItemsAsOf = async (deps: AsOfDeps, principal: Principal, query: GetQuery & { as_of: string }, given: ReadonlySet<string>) => {
  checkGetQuery(query, given);
  const at = parseAsOf(query.as_of);
  const invalid = AS_OF_DISALLOWED.filter((field) => given.has(field));
  if (invalid.length > 0 || query.parent_or_child === 'parent' || query.item_laui === undefined) {
    throw badRequest('Invalid argument: as_of reads one item (item_laui) or its children (parent_or_child=child); not with is_root or parent_or_child=parent');
  }
  const principals = await deps.access.principals(principal);
  const then = timeTravel(deps.asOf, at, principal, principals);
  const anchor = await then.doc(query.item_laui);
  if (!anchor) throw notFound(`Item not found with laui: ${query.item_laui}`);
  if ([...given].every((field) => field === 'item_laui' || field === 'as_of')) return itemView(anchor, await then.reader(anchor));
  if (!(await then.can(anchor, 'VIEW'))) throw forbidden();
  const offset = query.page_token !== undefined ? (decodePageToken(query.page_token) ?? 0) : (query.page - 1) * query.per_page;
  const children = await childrenAt(deps, then, anchor.laui, query, offset + query.per_page + 1);
  const page = children.slice(offset, offset + query.per_page);
  const hasNext = children.length > offset + query.per_page;
  const items = [];
  for (const doc of page) items.push(await viewWithChildren(deps, then, doc, query, query.depth - 1));
  const currentPage = query.page_token !== undefined && query.per_page > 0 ? Math.floor(offset / query.per_page) + 1 : query.page;
  return { items, pagination: { current_page: currentPage, per_page: query.per_page, has_next: hasNext, next_page_token: hasNext ? encodePageToken(offset + query.per_page) : null } };
};

type Then = ReturnType<typeof timeTravel>;

/** Access decisions as at `at`: the item's and its true ancestors' access maps folded to then. */
const timeTravel = (reader: ItemAsOfReader, at: string, principal: Principal, principals: Set<Laui>) => {
  // One fold per item and request: the children of a folder share its ancestors.
  const folded = new Map<Laui, Promise<ItemDoc | null>>();
  const docAt = (laui: Laui): Promise<ItemDoc | null> => {
    let doc = folded.get(laui);
    if (!doc) folded.set(laui, (doc = reader.at(laui, at)));
    return doc;
  };
  const chain = async (doc: ItemDoc): Promise<AccessMaps[]> => {
    const maps = [doc.access];
    let parent = doc.parent_laui;
    for (let depth = 0; parent !== null && depth < MAX_DEPTH; depth += 1) {
      const ancestor = await docAt(parent);
      if (!ancestor) break;
      maps.push(ancestor.access);
      parent = ancestor.parent_laui;
    }
    return maps;
  };
  const then = {
    at,
    doc: docAt,
    can: async (doc: ItemDoc, permission: Permission): Promise<boolean> => principal.isAdmin || grants(principals, await chain(doc), permission),
    /** As itemView's readerOf: a caller with VIEW then sees a credential's non-secret fields, any other its keys. */
    reader: async (doc: ItemDoc): Promise<'viewer' | 'stranger'> => (!hasSecretFields(doc.item_type) || (await then.can(doc, 'VIEW')) ? 'viewer' : 'stranger'),
  };
  return then;
};

/**
 * The first `wanted` children of `parentLaui` at `then`, filtered and sorted as the current listing
 * is. Candidates are the items whose true parent it is and the soft links to it created by then
 * (read models), less those created after `then` or of another item type (both never change, so
 * the current row answers); each is folded to then.
 *
 * In creation order (the default sort; `created_seq` never changes either) the candidates are folded
 * in that order until `wanted` are kept, so a page costs the folds of the pages before it, not of
 * the whole folder. Any other order is a field the fold decides: all candidates are folded, at most
 * AS_OF_SORTED_CHILDREN_LIMIT of them (400 beyond).
 */
const childrenAt = async (deps: AsOfDeps, then: Then, parentLaui: Laui, query: GetQuery, wanted: number): Promise<ItemDoc[]> => {
  const field = query.sort_by ?? 'created_seq';
  const candidates: Array<{ doc: ItemDoc; soft: boolean }> = [];
  const existedThen = (doc: ItemDoc) => doc.created_at <= then.at && (query.item_type === undefined || doc.item_type === query.item_type);
  const trueChildren = await deps.items.find({ where: { parent_laui: parentLaui }, sort: { field: 'created_seq', direction: 'asc' } });
  for (const doc of trueChildren) if (existedThen(doc)) candidates.push({ doc, soft: false });
  if (query.item_permission !== 'is_true_parent') {
    for (const link of await deps.links.find({ where: { parent_laui: parentLaui, true_parent: false } })) {
      const doc = link.created_at <= then.at ? await deps.items.get(link.child_laui) : null;
      if (doc && existedThen(doc)) candidates.push({ doc, soft: true });
    }
    candidates.sort((a, b) => a.doc.created_seq - b.doc.created_seq);
  }
  const inCreationOrder = field === 'created_seq';
  if (!inCreationOrder && candidates.length > AS_OF_SORTED_CHILDREN_LIMIT) {
    throw badRequest(`Invalid argument: as_of with sort_by=${field} lists folders of at most ${AS_OF_SORTED_CHILDREN_LIMIT} children (this one has ${candidates.length}); list them in creation order (no sort_by)`);
  }
  const kept: ItemDoc[] = [];
  for (const { doc: current, soft } of candidates) {
    if (inCreationOrder && kept.length >= wanted) break;
    const doc = await then.doc(current.laui);
    if (!doc || (soft && !(await then.can(doc, 'VIEW'))) || !(await keeps(then, doc, query))) continue;
    kept.push(doc);
  }
  return inCreationOrder ? kept : kept.sort(compareByField({ field, direction: 'asc' }));
};

const keeps = async (then: Then, doc: ItemDoc, query: GetQuery): Promise<boolean> => {
  if (!query.is_deleted && doc.deleted_at !== null) return false;
  if (query.item_type !== undefined && doc.item_type !== query.item_type) return false;
  if (query.filter_state !== undefined && doc.state !== query.filter_state) return false;
  const wanted = query.item_permission;
  if (wanted === undefined || wanted === 'is_true_parent') return true;
  if (wanted === 'true_parent_edit') {
    const parent = doc.parent_laui === null ? null : await then.doc(doc.parent_laui);
    return parent !== null && (await then.can(parent, 'EDIT'));
  }
  return then.can(doc, PERMISSIONS[wanted] ?? 'VIEW');
};

const viewWithChildren = async (deps: AsOfDeps, then: Then, doc: ItemDoc, query: GetQuery, depth: number): Promise<Record<string, unknown>> => {
  const view = itemView(doc, await then.reader(doc));
  if (depth > 0) {
    const children = (await childrenAt(deps, then, doc.laui, query, NESTED_LIMIT)).slice(0, NESTED_LIMIT);
    const nested = [];
    for (const child of children) nested.push(await viewWithChildren(deps, then, child, query, depth - 1));
    view.children = nested;
  }
  return view;
};
