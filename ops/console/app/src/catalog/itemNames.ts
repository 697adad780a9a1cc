import { ApiError, api, errorText, query } from '../api.ts';
import type { Item } from './types.ts';

/** What a reference to an item shows: its name, or why the caller cannot see it. */
export type ItemName =
  | { kind: 'found'; name: string; item_type: string; deleted: boolean }
  | { kind: 'hidden' | 'missing' | 'failed'; reason: string };

/**
 * Names of referenced items, once per page load (GET /catalog/get answers with the item as the
 * caller may see it). Items the console loads anyway (the item on screen) refresh their entry, so
 * a rename shows on the next item that refers to it. A failed look-up is not kept: it is tried
 * again by the next reference.
 */
const resolved = new Map<string, ItemName>();
const pending = new Map<string, Promise<ItemName>>();

const found = (item: Pick<Item, 'name' | 'item_type' | 'deleted_at'>): ItemName => ({
  kind: 'found',
  name: item.name,
  item_type: item.item_type,
  deleted: Boolean(item.deleted_at),
});

export const rememberItem = (item: Item): void => {
  resolved.set(item.laui, found(item));
};

export const knownItemName = (laui: string): ItemName | undefined => resolved.get(laui);

export const itemName = (laui: string): Promise<ItemName> => {
  const known = resolved.get(laui);
  if (known) return Promise.resolve(known);
  let lookup = pending.get(laui);
  if (!lookup) {
    lookup = api<Item>(`/api/v1/catalog/get?${query({ item_laui: laui })}`).then(
      (item) => {
        const name = found(item);
        resolved.set(laui, name);
        return name;
      },
      (error: unknown): ItemName => {
        if (error instanceof ApiError && error.status === 403) {
          resolved.set(laui, { kind: 'hidden', reason: 'not visible to you' });
        } else if (error instanceof ApiError && error.status === 404) {
          resolved.set(laui, { kind: 'missing', reason: 'no such item' });
        } else {
          return { kind: 'failed', reason: errorText(error) };
        }
        return resolved.get(laui) as ItemName;
      },
    );
    pending.set(laui, lookup);
    void lookup.finally(() => pending.delete(laui));
  }
  return lookup;
};
