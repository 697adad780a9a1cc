import { AppError, badRequest, notFound, unauthorized, unprocessable } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Marketplace } from '../../shared/ports/Marketplace.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import type { UserDoc } from '../../shared/read-models/UserDoc.ts';
import { MASK } from '../../shared/item-types/secretFields.ts';
import type { CatalogDeps } from '../catalog/catalogDeps.ts';
import { createItem } from '../catalog/createItem.ts';
import { convertMarketplaceItem, IMPORTABLE_BASES, importableBase } from './convertMarketplaceItem.ts';

export const NO_TOKEN = 'No Marketplace access token stored';
export const INVALID_TOKEN = 'Invalid Marketplace access token';
export const NOT_IN_MARKETPLACE = 'Item not found in Marketplace';
export const CONNECT_FAILED = 'Error connecting to Marketplace: ';
export const FETCH_FAILED = 'Error fetching item from Marketplace: ';
export const IMPORTED = 'Item imported successfully from Marketplace';

export interface ImportDeps extends CatalogDeps {
  /** Null when MARKETPLACE_URL is not set. */
  marketplace: Marketplace | null;
  /** The caller's sealed marketplace token (spec 4.7), as GET /user/marketplace_access_token/get reads it. */
  users: Collection<UserDoc>;
}

export interface ImportRequest {
  marketplace_item_id: string;
  parent_laui: string;
}

export interface Imported {
  laui: Laui;
  position: Position;
  message: string;
}

/** What a Bearer header can carry (visible ASCII): anything else could not be sent, so it cannot be valid. */
const SENDABLE_TOKEN = /^[\x21-\x7e]+$/;

/** The 500 of a fetch that failed, with a reason that never quotes the token (the adapter masks it too). */
const failure = (prefix: string, reason: string, token: string): AppError => new AppError(500, `${prefix}${reason.split(token).join(MASK)}`);

const isEntryList = (detail: unknown): detail is Array<Record<string, unknown>> => Array.isArray(detail);

/**
 * The create pipeline's 422 (a schema list, or the hierarchy's `{message, item_type_passed,
 * allowed_item_types}`) in the import's 422 form, the `{summary, validation_context}` object of spec
 * 4.8 (the shape POST /action/run uses): a summary line, and the context with the create entries.
 */
const importValidationFailure = (detail: unknown, context: Record<string, unknown>): AppError => {
  if (isEntryList(detail)) {
    const problems = detail.map((entry) => {
      const loc = Array.isArray(entry.loc) ? entry.loc.filter((segment) => segment !== 'body').join('.') : '';
      return `${loc || 'body'}: ${String(entry.msg)}`;
    });
    return unprocessable({
      summary: `Imported item validation failed with ${detail.length} error${detail.length === 1 ? '' : 's'}: ${problems.join('; ')}`,
      validation_context: { ...context, errors: detail },
    });
  }
  if (detail !== null && typeof detail === 'object') {
    const { message, ...rest } = detail as Record<string, unknown>;
    const summary = typeof message === 'string' ? message : 'Imported item validation failed';
    return unprocessable({
      summary,
      validation_context: { ...context, ...rest, errors: [{ type: 'value_error', loc: ['body', 'item_type'], msg: summary, input: context.item_type }] },
    });
  }
  const summary = typeof detail === 'string' ? detail : 'Imported item validation failed';
  return unprocessable({ summary, validation_context: { ...context, errors: [] } });
};

/**
 * POST /api/v1/marketplace/import (spec 4.8): the caller's stored token (400 without one), the item
 * fetched from MARKETPLACE_URL with it, spec 4.8's conversion (convertMarketplaceItem), then the
 * catalog create pipeline as the caller (schema, hierarchy, EDIT on the parent, unique name), its
 * ItemCreated naming the source (`imported_from`). Statuses: docs/decisions.md, Marketplace import.
 */
export const importMarketplaceItem = async (deps: ImportDeps, principal: Principal, request: ImportRequest, metadata: EventMetadata): Promise<Imported> => {
  const user = await deps.users.peek(principal.laui);
  if (!user) throw unauthorized();
  const token = user.marketplace_token ? deps.secrets.open(user.marketplace_token) : '';
  if (token === '') throw badRequest(NO_TOKEN);
  if (!SENDABLE_TOKEN.test(token)) throw unauthorized(INVALID_TOKEN);
  if (deps.marketplace === null) throw new AppError(500, `${CONNECT_FAILED}MARKETPLACE_URL is not set`);

  const fetched = await deps.marketplace.fetchItem(request.marketplace_item_id, token);
  switch (fetched.kind) {
    case 'unauthorized':
      throw unauthorized(INVALID_TOKEN);
    case 'not_found':
      throw notFound(NOT_IN_MARKETPLACE);
    case 'unreachable':
      throw failure(CONNECT_FAILED, fetched.reason, token);
    case 'bad_answer':
      throw failure(FETCH_FAILED, fetched.reason, token);
    case 'item':
      break;
  }
  const item = fetched.body;
  const itemType = item.item_type;
  const name = item.name;
  if (typeof itemType !== 'string' || typeof name !== 'string') {
    throw new AppError(500, `${FETCH_FAILED}the answer is not a catalog item (it has no item_type and name)`);
  }
  // A soft-deleted marketplace item is not on offer.
  if (item.deleted_at !== undefined && item.deleted_at !== null) throw notFound(NOT_IN_MARKETPLACE);

  const context = { item_type: itemType, operation: 'import', name, marketplace_item_id: request.marketplace_item_id, parent_laui: request.parent_laui };
  if (importableBase(itemType) === null) {
    const summary = `Item type ${itemType} cannot be imported from the Marketplace; importable types: ${IMPORTABLE_BASES.join(', ')} (and their subtypes)`;
    throw unprocessable({
      summary,
      validation_context: {
        ...context,
        importable_types: [...IMPORTABLE_BASES],
        errors: [{ type: 'value_error', loc: ['body', 'item_type'], msg: summary, input: itemType }],
      },
    });
  }

  const converted = convertMarketplaceItem(item, itemType, name, request.parent_laui);
  const created = await createItem(deps, principal, converted.body, metadata, {
    importedFrom: { marketplace_url: deps.marketplace.url, item_id: request.marketplace_item_id },
  }).catch((error: unknown) => {
    throw error instanceof AppError && error.status === 422 ? importValidationFailure(error.detail, context) : error;
  });
  const message =
    converted.strippedSecrets.length === 0
      ? IMPORTED
      : `${IMPORTED}; masked secret values were not imported, set them on the item: ${converted.strippedSecrets.join(', ')}`;
  return { laui: created.laui, position: created.position, message };
};
