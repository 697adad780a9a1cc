import { MongoBulkWriteError, MongoServerError, type Collection as MongoCollection } from 'mongodb';
import type { Doc, IndexSpec } from '../../../shared/read-store/ReadStore.ts';
import { UniqueIndexViolationError } from '../../../projections/read-store/UniqueIndexViolationError.ts';
import { filterOf } from './mongoQuery.ts';
import type { StoredDoc } from './storedFields.ts';

const DUPLICATE_KEY = 11000;

/** The index a duplicate-key error names ("... index: <name> dup key: ..."); null if it is no such error. */
export const duplicateKeyIndex = (error: unknown): string | null => {
  if (!(error instanceof MongoServerError) || error.code !== DUPLICATE_KEY) return null;
  const messages = [error.message, ...writeErrorMessages(error)];
  for (const message of messages) {
    const named = /index: (\S+) dup key/.exec(message);
    if (named?.[1]) return named[1];
  }
  return '';
};

const writeErrorMessages = (error: MongoServerError): string[] => {
  if (!(error instanceof MongoBulkWriteError)) return [];
  const errors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
  return errors.map((writeError) => writeError.errmsg ?? '');
};

/** The position, in its bulk, of the write a bulk duplicate-key error refused. */
export const refusedWriteIndex = (error: unknown): number | null => {
  if (!(error instanceof MongoBulkWriteError)) return null;
  const [first] = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
  return first?.index ?? null;
};

/**
 * The port's error for a refused put of `doc`: every adapter throws UniqueIndexViolationError,
 * with the index's fields, the key as the memory store shows it, and the holder of the key (looked
 * up, since MongoDB names only the key).
 */
export const uniqueViolation = async (
  collectionName: string,
  collection: MongoCollection<StoredDoc>,
  spec: IndexSpec | undefined,
  doc: Doc,
): Promise<UniqueIndexViolationError> => {
  const fields = spec?.fields ?? [];
  const key = JSON.stringify(fields.map((field) => doc[field] ?? null));
  let existingId = '';
  if (spec) {
    const where = Object.fromEntries(fields.map((field) => [field, (doc[field] ?? null) as string | number | boolean | null]));
    const holder = await collection.findOne({ ...filterOf({ ...where, ...spec.partial }), _id: { $ne: doc.id } }, { projection: { _id: 1 } }).catch(() => null);
    existingId = holder ? String(holder._id) : '';
  }
  return new UniqueIndexViolationError(collectionName, fields, key, existingId, doc.id);
};
