import type { Doc } from '../../../shared/read-store/ReadStore.ts';

/** A document as MongoDB holds it: the port's `id` is `_id`. */
export interface StoredDoc {
  _id: string;
  [field: string]: unknown;
}

/**
 * Field names as MongoDB stores them. Read models hold user JSON (item fields, task payloads), so
 * any key may arrive; MongoDB reads a dot as a path, a leading `$` as an operator (the driver
 * refuses a replacement that starts with one), cannot store a NUL in a name, and reserves a
 * top-level `_id` for the document id. Such keys are percent-escaped at every depth, and `%`
 * itself too, which makes the mapping reversible: every `%` in a stored name starts an escape.
 * Most documents have no such key and are passed on without a copy.
 */
const ESCAPES: Readonly<Record<string, string>> = { '%': '%25', '.': '%2E', $: '%24', '\0': '%00' };
const UNESCAPES: Readonly<Record<string, string>> = { '%25': '%', '%2E': '.', '%24': '$', '%00': '\0', '%5F': '_' };
const NEEDS_ESCAPE = /[%.\0]|^\$/;
const ESCAPED = /[%.\0]|^\$/g;

/** The stored name of a field; `topLevel` also escapes `_id`, which stands for the document's `id`. */
export const storedName = (name: string, topLevel = true): string => {
  if (topLevel && name === '_id') return '%5Fid';
  return NEEDS_ESCAPE.test(name) ? name.replace(ESCAPED, (char) => ESCAPES[char] as string) : name;
};

const readName = (name: string): string => (name.includes('%') ? name.replace(/%(?:25|2E|24|00|5F)/g, (escape) => UNESCAPES[escape] as string) : name);

/** An own property even for `__proto__` (a user's field name), which `=` would take for the prototype. */
const setOwn = (target: Record<string, unknown>, key: string, value: unknown): void => {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
};

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
};

/** `value` with every key mapped by `rename`, or `value` itself when no key changes. */
const mapKeys = (value: unknown, rename: (name: string) => string): unknown => {
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let index = 0; index < value.length; index += 1) {
      const item: unknown = value[index];
      const mapped = mapKeys(item, rename);
      if (mapped !== item) (copy ??= [...value])[index] = mapped;
    }
    return copy ?? value;
  }
  if (!isPlainObject(value)) return value;
  let copy: Record<string, unknown> | null = null;
  for (const key in value) {
    const item = value[key];
    const name = rename(key);
    const mapped = mapKeys(item, rename);
    if (name === key && mapped === item && copy === null) continue;
    copy ??= copyUpTo(value, key);
    setOwn(copy, name, mapped);
  }
  return copy ?? value;
};

/** The entries before `stop`, which needed no change: the copy starts from them. */
const copyUpTo = (value: Record<string, unknown>, stop: string): Record<string, unknown> => {
  const copy: Record<string, unknown> = {};
  for (const key in value) {
    if (key === stop) break;
    setOwn(copy, key, value[key]);
  }
  return copy;
};

const nestedStoredName = (name: string): string => storedName(name, false);

/** The document as stored: `id` becomes `_id`, names are escaped. Refuses a document without a string id. */
export const toStored = (collection: string, doc: Doc): StoredDoc => {
  if (typeof doc.id !== 'string') throw new TypeError(`A document of ${collection} needs a string id`);
  const stored: StoredDoc = { _id: doc.id };
  for (const key in doc) {
    if (key === 'id') continue;
    const value = doc[key];
    if (value === undefined) continue;
    setOwn(stored, storedName(key), mapKeys(value, nestedStoredName));
  }
  return stored;
};

/** The document as read: `_id` back to `id`, names unescaped; nothing of MongoDB's own is left. */
export const fromStored = (stored: StoredDoc): Doc => {
  const doc: Doc = { id: String(stored._id) };
  for (const key in stored) {
    if (key === '_id') continue;
    setOwn(doc, readName(key), mapKeys(stored[key], readName));
  }
  return doc;
};
