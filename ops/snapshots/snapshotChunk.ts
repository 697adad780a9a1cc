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
 *
 * Laid out `[head length u32][head][documents]`, the head (format 4) being the ids and the shared
 * fields with their values: a load reads the head alone, maps the ids to the chunk and leaves the
 * documents to be decoded on first access (DocumentMap), and a scan before then skips a chunk
 * whose shared values show that none of its documents can match (a folder's children, an item type).
 */
export const encodeChunk = (docs: ReadonlyArray<Doc>): Buffer => {
  const shared = sharedFieldsOf(docs);
  const encoded =
    shared.length === 0
      ? docs
      : docs.map((doc) => {
          const copy: Doc = { ...doc };
          for (const { field, values } of shared) copy[field] = values === null ? 0 : values.codeOf(doc[field]);
          return copy;
        });
  const head = asciiJson([docs.map((doc) => doc.id), shared.map(({ field, values }): SharedField => [field, values === null ? null : values.list])]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(head.length);
  return Buffer.concat([length, head, asciiJson(encoded)]);
};

/** The fields worth writing once: held by every document as a string or an object, equal to the id or mostly repeated. */
const sharedFieldsOf = (docs: ReadonlyArray<Doc>): Array<{ field: string; values: Values | null }> => {
  const first = docs[0];
  const shared: Array<{ field: string; values: Values | null }> = [];
  if (first === undefined) return shared;
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
  return shared;
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

/** A chunk's head, read at load: its documents' ids, and its fields written once with the values they take. */
export interface ChunkHead {
  ids: string[];
  shared: SharedField[];
  /** The documents' bytes, for `decodeDocuments` (on first access). */
  documents: Buffer;
}

/** The head of a chunk written by `encodeChunk`, its documents left undecoded; throws on a chunk of another shape. */
export const decodeChunkHead = (body: Buffer): ChunkHead => {
  if (body.length < 4) throw new Error('a chunk of documents without its head');
  const end = 4 + body.readUInt32BE(0);
  if (end > body.length) throw new Error('a chunk of documents whose head runs past it');
  const head = parseAscii(body.subarray(4, end));
  if (!Array.isArray(head) || head.length !== 2 || !Array.isArray(head[0]) || !Array.isArray(head[1])) throw new Error('a chunk of documents whose head is of another shape');
  const [ids, shared] = head as [unknown[], unknown[]];
  if (!ids.every((id) => typeof id === 'string')) throw new Error('a chunk of documents whose ids are not strings');
  if (!shared.every((entry) => Array.isArray(entry) && entry.length === 2 && typeof entry[0] === 'string' && (entry[1] === null || Array.isArray(entry[1])))) {
    throw new Error('a chunk of documents whose shared fields are of another shape');
  }
  return { ids: ids as string[], shared: shared as SharedField[], documents: body.subarray(end) };
};

/** JSON text that must be ASCII: a byte past it is not this format's (format 2 held UTF-8), which latin1 would misread. */
const parseAscii = (text: Buffer): unknown => {
  if (!isAscii(text)) throw new Error('a chunk of documents with bytes outside ASCII');
  return JSON.parse(text.toString('latin1')) as unknown;
};

/** The documents of a chunk (its head's `documents` and `shared`), with the values written once put back; throws on a body of another shape. */
export const decodeDocuments = ({ documents, shared }: Pick<ChunkHead, 'documents' | 'shared'>): Doc[] => {
  const docs = parseAscii(documents);
  if (!Array.isArray(docs)) throw new Error('a chunk of documents of another shape');
  for (const [field, values] of shared) {
    if (values === null) {
      for (const doc of docs as Doc[]) doc[field] = doc.id;
    } else {
      for (const doc of docs as Doc[]) {
        const value = values[doc[field] as number];
        if (value === undefined) throw new Error(`a chunk of documents whose ${field} points nowhere`);
        doc[field] = value;
      }
    }
  }
  return docs as Doc[];
};
