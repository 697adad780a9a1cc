import { createHash } from 'node:crypto';
import { MongoServerError, type Collection as MongoCollection, type Document, type IndexDescription } from 'mongodb';
import type { IndexSpec } from '../../../shared/read-store/ReadStore.ts';
import { storedName, type StoredDoc } from './storedFields.ts';

/** MongoDB error codes met while declaring indexes. */
const INDEX_OPTIONS_CONFLICT = 85;
const INDEX_KEY_SPECS_CONFLICT = 86;
const NAMESPACE_NOT_FOUND = 26;

/**
 * An index's name: its identity, as in the memory store (the same fields in the same order, and
 * the same partial values, are the same index). Readable where it can be (`project_1_state_1`,
 * MongoDB's own convention), with a short hash of the partial filter. Names hold no space, which
 * lets a duplicate-key message be parsed back to its index.
 */
export const mongoIndexName = (spec: IndexSpec): string => {
  const key = spec.fields.map((field) => `${storedName(field).replace(/[^A-Za-z0-9_%-]/g, (char) => `%${char.codePointAt(0)?.toString(16)}`)}_1`).join('_');
  if (!spec.partial) return key;
  return `${key}__partial_${createHash('sha256').update(JSON.stringify(Object.entries(spec.partial).sort())).digest('hex').slice(0, 10)}`;
};

/**
 * The MongoDB index of a spec. Every index is ascending: a B-tree serves equality and, on its
 * first field, the ranges of an `ordered` spec. An ordered single-field spec is the plain index of
 * that field (the memory store keeps it as a sorted list and ignores `unique` there, as here).
 */
export const indexDescription = (spec: IndexSpec): IndexDescription => {
  const ordered = spec.ordered === true && spec.fields.length === 1;
  const description: IndexDescription = {
    key: Object.fromEntries(spec.fields.map((field) => [storedName(field), 1])),
    name: mongoIndexName(ordered ? { fields: spec.fields } : spec),
  };
  if (spec.unique === true && !ordered) description.unique = true;
  if (spec.partial && !ordered) {
    description.partialFilterExpression = Object.fromEntries(Object.entries(spec.partial).map(([field, value]) => [storedName(field), { $eq: value }]));
  }
  return description;
};

/**
 * Creates the indexes (creating an existing identical index is a no-op in MongoDB, so every
 * process may declare them). Like the memory store, a later declaration may make an existing
 * index unique, and a declaration without `unique` leaves a unique index as it is: MongoDB
 * answers both with a conflict, after which the existing indexes are compared one by one.
 */
export const createIndexes = async (collection: MongoCollection<StoredDoc>, specs: ReadonlyArray<IndexSpec>): Promise<void> => {
  if (specs.length === 0) return;
  const wanted = specs.map((spec) => ({ ...indexDescription(spec), name: mongoIndexName(spec.ordered === true && spec.fields.length === 1 ? { fields: spec.fields } : spec) }));
  try {
    await collection.createIndexes(wanted);
    return;
  } catch (error) {
    if (!(error instanceof MongoServerError) || (error.code !== INDEX_OPTIONS_CONFLICT && error.code !== INDEX_KEY_SPECS_CONFLICT)) throw error;
  }
  const existing = new Map((await existingIndexes(collection)).map((index) => [index.name, index]));
  for (const description of wanted) {
    const present = existing.get(description.name);
    if (!present) await collection.createIndexes([description]);
    else if (description.unique === true && present.unique !== true) await makeUnique(collection, description, description.name);
  }
};

/** Drops the plain index and builds the unique one; if duplicates stop that, the plain one returns. */
const makeUnique = async (collection: MongoCollection<StoredDoc>, description: IndexDescription, name: string): Promise<void> => {
  await collection.dropIndex(name);
  try {
    await collection.createIndexes([description]);
  } catch (error) {
    const { unique: _unique, ...plain } = description;
    await collection.createIndexes([plain]);
    throw error;
  }
};

/** The indexes a collection has, less `_id`'s; none when the collection does not exist yet. */
export const existingIndexes = async (collection: MongoCollection<StoredDoc>): Promise<Array<IndexDescription & { name: string }>> => {
  try {
    const indexes = await collection.listIndexes().toArray();
    return indexes
      .filter((index) => index.name !== '_id_')
      .map((index) => ({
        key: index.key as Document,
        name: String(index.name),
        ...(index.unique === true ? { unique: true } : {}),
        ...(index.partialFilterExpression ? { partialFilterExpression: index.partialFilterExpression as Document } : {}),
      }));
  } catch (error) {
    if (error instanceof MongoServerError && error.code === NAMESPACE_NOT_FOUND) return [];
    throw error;
  }
};
