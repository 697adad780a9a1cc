import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { itemView } from './itemView.ts';

/**
 * An item's view already serialised: a listing's answer is written with these texts as they are
 * (listingJson), not parsed and serialised again. Serialised any other way it is the view itself.
 */
export class ItemJson {
  constructor(readonly text: string) {}

  toJSON(): unknown {
    return JSON.parse(this.text) as unknown;
  }
}

/**
 * A listing's answer as JSON text, the items' cached texts written as they are: what
 * JSON.stringify(listing) gives. Built by one join, so the text is flat: a concatenation would be
 * a rope that the answer's Content-Length (Buffer.byteLength) copies flat again (~2% of the bytes
 * the service allocated under a client watching its runs).
 */
export const listingJson = (listing: { items: ReadonlyArray<unknown>; pagination: unknown }): string => {
  const parts = ['{"items":['];
  for (const [index, item] of listing.items.entries()) {
    if (index > 0) parts.push(',');
    parts.push(item instanceof ItemJson ? item.text : JSON.stringify(item));
  }
  parts.push('],"pagination":', JSON.stringify(listing.pagination), '}');
  return parts.join('');
};

/**
 * The JSON of recently read items' views, for the flat read (`item_laui` alone) and the items of a
 * listing a caller may VIEW (a client watching its runs lists a folder's tasks again and again),
 * whose view is the same for every such caller. An entry is good while the read store still holds
 * the very document it was made from: the memory store replaces a document on every change and
 * never mutates one (Collection.peek/adopt), so identity is freshness. Stores that hand out copies simply miss.
 * Bounded: the oldest entry goes first (a million items must not mean a million strings).
 */
export class ItemJsonCache {
  private readonly entries = new Map<string, { doc: ItemDoc; json: string }>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.entries.size;
  }

  json(doc: ItemDoc): string {
    const hit = this.entries.get(doc.laui);
    if (hit?.doc === doc) return hit.json;
    const json = JSON.stringify(itemView(doc));
    if (hit) this.entries.delete(doc.laui);
    else if (this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(doc.laui, { doc, json });
    return json;
  }
}
