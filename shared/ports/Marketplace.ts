/**
 * The external marketplace of POST /api/v1/marketplace/import (spec 4.8): a service that speaks this
 * same API (an instance of this service works as one). Items are read with its catalog's flat read,
 * `GET <url>/api/v1/catalog/get?item_laui=<id>`, as the user whose marketplace token is presented.
 * Only `ops/` talks HTTP (ops/marketplace/HttpMarketplace.ts); the import decides what each answer means.
 */

/**
 * What one fetch came to, mapped by the import to the spec's statuses:
 * - `item`: a 2xx answer holding a JSON object (whether it is an item is the import's to judge);
 * - `unauthorized`: the marketplace answered 401 or 403 (401 `Invalid Marketplace access token`);
 * - `not_found`: it answered 404 (404 `Item not found in Marketplace`);
 * - `unreachable`: no answer (refused, DNS, connect timeout, total timeout, connection cut) (500
 *   `Error connecting to Marketplace: <reason>`);
 * - `bad_answer`: an answer that is no item: another status, a redirect (never followed), a body
 *   over the size cap, not JSON, nested too deep (500 `Error fetching item from Marketplace: <reason>`).
 * Reasons never hold the token, nor any of the marketplace's body but a short error `detail`.
 */
export type MarketplaceFetch =
  | { kind: 'item'; body: Record<string, unknown> }
  | { kind: 'unauthorized'; status: number }
  | { kind: 'not_found' }
  | { kind: 'unreachable'; reason: string }
  | { kind: 'bad_answer'; reason: string };

export interface Marketplace {
  /** The marketplace's base URL (MARKETPLACE_URL, no trailing slash): named on every item imported from it. */
  readonly url: string;
  fetchItem(itemId: string, token: string): Promise<MarketplaceFetch>;
}
