import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { itemView } from './itemView.ts';

/**
 * The JSON of recently read items' views, for the flat read (`item_laui` alone), whose answer is
 * the same for every caller. An entry is good while the read store still holds the very document
 * it was made from: the memory store replaces a document on every change and never mutates one
 * (Collection.peek/adopt), so identity is freshness. Stores that hand out copies simply miss.
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
