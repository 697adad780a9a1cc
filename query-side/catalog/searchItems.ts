import { unprocessable } from '../../shared/errors.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { FindOptions } from '../../shared/read-store/ReadStore.ts';
import { resolveItemType } from '../../shared/item-types/itemTypes.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { LinkDoc } from '../../shared/read-models/LinkDoc.ts';
import type { GetDeps } from './getItems.ts';
import { decodePageToken, encodePageToken, itemView } from './itemView.ts';

export interface SearchBody {
  item_filter?: Record<string, unknown>;
  link_filter?: { parent_laui?: Laui; child_laui?: Laui; true_parent?: boolean; parent_type?: string; child_type?: string };
  pagination: { page: number; per_page: number; sort_order: 'asc' | 'desc'; page_token?: string };
  projection?: { include?: string[]; exclude?: string[] };
}

type Scalar = string | number | boolean | null;
const isScalar = (value: unknown): value is Scalar => value === null || ['string', 'number', 'boolean'].includes(typeof value);

const pagination = (body: SearchBody) => {
  const { page, per_page, page_token } = body.pagination;
  const offset = page_token !== undefined ? decodePageToken(page_token) : (page - 1) * per_page;
  if (offset === null) throw unprocessable([{ type: 'value_error', loc: ['body', 'pagination', 'page_token'], msg: 'Invalid page token', input: page_token }]);
  return { offset, perPage: per_page, currentPage: page_token !== undefined && per_page > 0 ? Math.floor(offset / per_page) + 1 : page };
};

const project = (view: Record<string, unknown>, projection: SearchBody['projection']): Record<string, unknown> => {
  if (!projection) return view;
  let fields = Object.keys(view);
  if (projection.include && projection.include.length > 0) {
    const wanted = new Set([...projection.include, 'laui', 'item_type', 'pk']);
    fields = fields.filter((field) => wanted.has(field));
  }
  if (projection.exclude) {
    const unwanted = new Set(projection.exclude.filter((field) => !['item_type', 'pk'].includes(field)));
    fields = fields.filter((field) => !unwanted.has(field));
  }
  return Object.fromEntries(fields.map((field) => [field, view[field]]));
};

const nonScalarEntry = (field: string, value: unknown) => ({
  type: 'value_error',
  loc: ['body', 'item_filter', field],
  msg: 'Filter values must be strings, numbers, booleans or null',
  input: value,
});

/** The equality filter an item_filter describes, with get_by_pk resolved to the pk index. */
const itemWhere = (filter: Record<string, unknown>): { where: FindOptions['where']; lauis: Laui[] | null } => {
  const { get_by_pk: byPk, item_lauis: lauis, item_laui: laui, ...rest } = filter;
  const where: Record<string, Scalar> = {};
  if (byPk === true) {
    const definition = typeof rest.item_type === 'string' ? resolveItemType(rest.item_type) : null;
    const fields = definition?.uniqueFields ?? [];
    const missing = ['item_type', ...fields].filter((field) => rest[field] === undefined);
    if (!definition || fields.length === 0 || missing.length > 0) {
      throw unprocessable([
        {
          type: 'missing',
          loc: ['body', 'item_filter'],
          msg: `get_by_pk needs item_type and every primary-key field: ${missing.join(', ') || 'item_type has no primary key'}`,
          input: filter,
        },
      ]);
    }
    // Quoted into the key: a value of another JSON type is refused first (String() of
    // `{"toString": "x"}` throws; of a list it would match a key the list never named).
    for (const field of fields) if (!isScalar(rest[field])) throw unprocessable([nonScalarEntry(field, rest[field])]);
    where.pk = fields.map((field) => String(rest[field])).join('-');
    where.item_type = definition.type;
    for (const field of fields) delete rest[field];
    delete rest.item_type;
  }
  if (laui !== undefined) where.id = laui as string;
  for (const [field, value] of Object.entries(rest)) {
    if (!isScalar(value)) throw unprocessable([nonScalarEntry(field, value)]);
    where[field] = value;
  }
  return { where, lauis: Array.isArray(lauis) ? (lauis as Laui[]) : null };
};

/**
 * The first `wanted` documents of a sorted query that pass `keep`, read in batches: the store cannot
 * filter on access, so a page is cut from what survives, never from what the store returned.
 */
const keptInOrder = async <T>(find: (skip: number, limit: number) => Promise<T[]>, keep: (doc: T) => Promise<boolean>, wanted: number): Promise<T[]> => {
  const kept: T[] = [];
  const batch = Math.max(wanted, 100);
  for (let skip = 0; kept.length < wanted; skip += batch) {
    const found = await find(skip, batch);
    for (const doc of found) if (await keep(doc)) kept.push(doc);
    if (found.length < batch) break;
  }
  return kept;
};

/**
 * POST /catalog/search. Items the caller cannot VIEW are left out (admins see all), and so are links
 * unless the caller can VIEW both their ends: the spec has no route-level check, but a search must
 * not list other tenants' items, nor their LAUIs through the links between them (docs/decisions.md).
 */
export const searchItems = async (deps: GetDeps, principal: Principal, body: SearchBody) => {
  const hasItem = body.item_filter !== undefined;
  if (hasItem === (body.link_filter !== undefined)) {
    throw unprocessable([{ type: 'value_error', loc: ['body'], msg: 'Exactly one of item_filter or link_filter must be given', input: null }]);
  }
  const { offset, perPage, currentPage } = pagination(body);
  // Creation order is log order (`created_seq`), the order created_at reflects, without ties.
  const sort = { field: 'created_seq', direction: body.pagination.sort_order } as const;
  const wanted = offset + perPage + 1;
  const principals = await deps.access.principals(principal);
  const visible = async (doc: ItemDoc | null) => doc !== null && (await deps.access.can(principal, doc, 'VIEW', principals));
  let views: Record<string, unknown>[];
  if (body.link_filter) {
    const where = Object.fromEntries(Object.entries(body.link_filter).filter(([, value]) => value !== undefined)) as FindOptions['where'];
    // An end that is gone (hard-deleted) cannot be viewed: only administrators see such a link.
    const bothEnds = async (link: LinkDoc) =>
      principal.isAdmin || ((await visible(await deps.items.peek(link.parent_laui))) && (await visible(await deps.items.peek(link.child_laui))));
    const links = principal.isAdmin
      ? await deps.links.find({ where, sort, skip: offset, limit: perPage + 1 })
      : (await keptInOrder((skip, limit) => deps.links.find({ where, sort, skip, limit }), bothEnds, wanted)).slice(offset);
    views = links.map(({ id: _id, _position: _p, created_seq: _seq, ...link }) => ({ laui: link.link_laui, ...link }));
  } else {
    const { where, lauis } = itemWhere(body.item_filter ?? {});
    let kept: ItemDoc[] = [];
    if (lauis !== null) {
      for (const laui of lauis) {
        const doc = await deps.items.get(laui);
        if (doc && Object.entries(where ?? {}).every(([field, value]) => (doc[field] ?? null) === value) && (await visible(doc))) kept.push(doc);
      }
      kept.sort((a, b) => (sort.direction === 'asc' ? 1 : -1) * (a.created_seq - b.created_seq));
    } else {
      kept = await keptInOrder((skip, limit) => deps.items.find({ where, sort, skip, limit }), visible, wanted);
    }
    views = kept.slice(offset).map((doc) => project(itemView(doc), body.projection));
  }
  const hasNext = views.length > perPage;
  return {
    items: views.slice(0, perPage),
    pagination: { current_page: currentPage, per_page: perPage, has_next: hasNext, next_page_token: hasNext ? encodePageToken(offset + perPage) : null },
  };
};
