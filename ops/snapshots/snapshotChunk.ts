import { isAscii } from 'node:buffer';
import type { Doc } from '../../shared/read-store/ReadStore.ts';

/**
 * A field of a chunk's documents written once: `null` when every document holds its own id there
 * (an item's `laui`), else the distinct values, each document holding its value's number instead.
 */
type SharedField = [field: string, values: unknown[] | null];

const isShareable = (value: unknown): boolean => typeof value === 'string' || (typeof value === 'object' && value !== null);

/**
 * A chunk of documents as a snapshot stores it: JSON text of the documents, with the fields whose
 * values repeat within the chunk (a folder's `parent_laui`, `item_type`, the empty `access` maps,
 * a creation second) replaced by numbers into one list of values. Loaded, every document of the
 * chunk points at the same string or object instead of a copy each: half the read models' memory
 * at a million items. Sharing objects is safe because stored documents are never changed in place
 * (a change replaces the document; reads get clones).
 *
 * JSON rather than v8.serialize: JSON.parse makes objects with their properties inside them, where
 * the deserializer adds a second array per document for all but four (a fifth less memory, and a
 * faster load). The read models are JSON documents: what JSON cannot hold (an undefined field) is
 * what no answer shows either.
 *
 * The text is ASCII (every other character written as a `\uXXXX` escape, which JSON.parse turns
 * back into it), so a load decodes it as latin1: a copy of the bytes into a one-byte string, where
 * UTF-8 decoding of a million documents took seconds, and JSON.parse scans one-byte strings faster.
 */
export const encodeDocuments = (docs: ReadonlyArray<Doc>): Buffer => {
  const first = docs[0];
  if (first === undefined) return Buffer.from('[[],[]]', 'latin1');
  const shared: Array<{ field: string; values: Values | null }> = [];
  for (const field of Object.keys(first)) {
    if (field === 'id' || !isShareable(first[field])) continue;
    let sameAsId = true;
    let shareable = true;
    const values = new Values();
    for (const doc of docs) {
      const value = doc[field];
      if (!Object.hasOwn(doc, field) || !isShareable(value)) {
        shareable = false;
        break;
      }
      if (value !== doc.id) sameAsId = false;
      values.codeOf(value);
    }
    if (!shareable) continue;
    if (sameAsId) shared.push({ field, values: null });
    // Values that mostly differ (a name, a primary key) gain nothing from a list of their own.
    else if (values.list.length <= docs.length / 2) shared.push({ field, values });
  }
  if (shared.length === 0) return asciiJson([docs, []]);
  const encoded = docs.map((doc) => {
    const copy: Doc = { ...doc };
    for (const { field, values } of shared) copy[field] = values === null ? 0 : values.codeOf(doc[field]);
    return copy;
  });
  return asciiJson([encoded, shared.map(({ field, values }): SharedField => [field, values === null ? null : values.list])]);
};

const NOT_ASCII = /[\u0080-\uffff]/;
const EVERY_NOT_ASCII = /[\u0080-\uffff]/g;

/** JSON text with every character outside ASCII escaped (JSON.stringify already escapes lone surrogates). */
const asciiJson = (value: unknown): Buffer => {
  const json = JSON.stringify(value);
  const ascii = NOT_ASCII.test(json) ? json.replace(EVERY_NOT_ASCII, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`) : json;
  return Buffer.from(ascii, 'latin1');
};

/** Distinct values in order of first sight: strings by themselves, objects by their JSON (apart, so the two never meet). */
class Values {
  readonly list: unknown[] = [];
  private readonly strings = new Map<string, number>();
  private readonly objects = new Map<string, number>();

  codeOf(value: unknown): number {
    const [codes, key] = typeof value === 'string' ? [this.strings, value] : [this.objects, JSON.stringify(value)];
    let code = codes.get(key);
    if (code === undefined) {
      code = this.list.push(value) - 1;
      codes.set(key, code);
    }
    return code;
  }
}

/** The documents of a chunk written by `encodeDocuments`; throws on a body of another shape. */
export const decodeDocuments = (body: Buffer): Doc[] => {
  // A byte past ASCII is not this format's (a chunk of format 2 held UTF-8): latin1 would read it as other characters.
  if (!isAscii(body)) throw new Error('a chunk of documents with bytes outside ASCII');
  const decoded = JSON.parse(body.toString('latin1')) as unknown;
  if (!Array.isArray(decoded) || decoded.length !== 2 || !Array.isArray(decoded[0]) || !Array.isArray(decoded[1])) throw new Error('a chunk of documents of another shape');
  const [docs, shared] = decoded as [Doc[], SharedField[]];
  for (const [field, values] of shared) {
    if (values === null) {
      for (const doc of docs) doc[field] = doc.id;
    } else {
      for (const doc of docs) {
        const value = values[doc[field] as number];
        if (value === undefined) throw new Error(`a chunk of documents whose ${field} points nowhere`);
        doc[field] = value;
      }
    }
  }
  return docs;
};
