import type { Document } from 'mongodb';
import type { FindOptions, RangeFilter } from '../../../shared/read-store/ReadStore.ts';
import { storedName } from './storedFields.ts';

type Where = NonNullable<FindOptions['where']>;
type Sort = NonNullable<FindOptions['sort']>;

/** The stored name of a queried field: `id` is MongoDB's `_id`, every other name is escaped. */
export const queriedField = (field: string): string => (field === 'id' ? '_id' : storedName(field));

/**
 * Every clause wraps its value in `$eq` so that a value is only ever a value: a where built from
 * user input cannot smuggle an operator in. Array values are excluded (`$not: {$type: 'array'}`):
 * MongoDB matches an array by any of its elements, the port compares whole values, as the memory
 * store does. `null` matches a missing field as well, in both.
 */
const equality = (field: string, value: unknown): Document => {
  if (value !== null && typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
    throw new TypeError(`where.${field} must be a string, number, boolean or null, got ${typeof value}`);
  }
  return field === 'id' ? { $eq: value } : { $eq: value, $not: { $type: 'array' } };
};

/**
 * Inclusive bounds. MongoDB's comparison operators already match only values of the bound's
 * type (a string bound never matches a number), which is the port's rule; without bounds any
 * string or number matches. Arrays are excluded for the reason above.
 */
const rangeClause = (range: RangeFilter): Document => {
  const clause: Document = { $not: { $type: 'array' } };
  for (const bound of ['gte', 'lte'] as const) {
    const value = range[bound];
    if (value === undefined) continue;
    if (typeof value !== 'string' && (typeof value !== 'number' || Number.isNaN(value))) {
      throw new TypeError(`range.${bound} must be a string or a number`);
    }
    clause[`$${bound}`] = value;
  }
  if (range.gte === undefined && range.lte === undefined) clause.$type = ['string', 'number'];
  return clause;
};

/** The MongoDB filter of a where (and range): a conjunction of per-field clauses. */
export const filterOf = (where: FindOptions['where'], range?: RangeFilter): Document => {
  const filter: Document = {};
  for (const [field, raw] of Object.entries(where ?? ({} as Where))) {
    // JSON has no undefined: an equality on it means null, as in the memory store.
    filter[queriedField(field)] = equality(field, raw ?? null);
  }
  if (range) {
    const name = queriedField(range.field);
    filter[name] = { ...(filter[name] as Document | undefined), ...rangeClause(range) };
  }
  return filter;
};

/**
 * A name no escaped field can take (an escaped name has `%` only before two hex digits), for the
 * sort key added by the pipeline below.
 */
const NULL_RANK = '%null';

/**
 * A sorted page as an aggregation. The port's order puts null and missing values last in both
 * directions and breaks ties by ascending id; MongoDB sorts null first ascending and has no
 * implicit tie-break, so a rank field sends nulls last and `_id` decides ties. Numbers, strings
 * and booleans then order as in the memory store (numbers < strings < booleans, strings by code
 * point). `$match` comes first, so the where is still served by an index.
 */
export const sortedPipeline = (filter: Document, sort: Sort, skip: number, limit: number | undefined): Document[] => {
  const field = queriedField(sort.field);
  const direction = sort.direction === 'desc' ? -1 : 1;
  const pipeline: Document[] = [{ $match: filter }];
  if (field === '_id') {
    pipeline.push({ $sort: { _id: direction } });
  } else {
    pipeline.push(
      { $addFields: { [NULL_RANK]: { $cond: [{ $eq: [{ $ifNull: [`$${field}`, null] }, null] }, 1, 0] } } },
      { $sort: { [NULL_RANK]: 1, [field]: direction, _id: 1 } },
    );
  }
  if (skip > 0) pipeline.push({ $skip: skip });
  if (limit !== undefined) pipeline.push({ $limit: limit });
  if (field !== '_id') pipeline.push({ $project: { [NULL_RANK]: 0 } });
  return pipeline;
};

/** The memory store's check, so that both stores refuse the same pages. */
export const checkedCount = (name: string, value: number | undefined): number | undefined => {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
  return value;
};
