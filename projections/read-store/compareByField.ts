import type { Doc, FindOptions } from '../../shared/read-store/ReadStore.ts';

type Sort = NonNullable<FindOptions['sort']>;

/**
 * Order of a sort: numbers, then strings, then booleans, then anything else (by its JSON);
 * null and missing values come last in both directions, so that "newest first" never opens on
 * documents that lack a date. Ties fall back to ascending id, which makes the order total:
 * pages cut by skip/limit neither repeat nor lose a document.
 */
export const compareByField = ({ field, direction }: Sort) => {
  const sign = direction === 'desc' ? -1 : 1;
  return (a: Doc, b: Doc): number => {
    const left = a[field] ?? null;
    const right = b[field] ?? null;
    const byValue =
      left === null || right === null ? Number(left === null) - Number(right === null) : sign * compareValues(left, right);
    return byValue !== 0 ? byValue : compareStrings(a.id, b.id);
  };
};

const rank = (value: unknown): number => {
  switch (typeof value) {
    case 'number':
      return 0;
    case 'string':
      return 1;
    case 'boolean':
      return 2;
    default:
      return 3;
  }
};

const compareValues = (left: unknown, right: unknown): number => {
  const byRank = rank(left) - rank(right);
  if (byRank !== 0) return byRank;
  if (typeof left === 'number' && typeof right === 'number') return left - right;
  if (typeof left === 'string' && typeof right === 'string') return compareStrings(left, right);
  if (typeof left === 'boolean' && typeof right === 'boolean') return Number(left) - Number(right);
  return compareStrings(JSON.stringify(left), JSON.stringify(right));
};

/** Code-unit order, not locale order: the same in every process and in MongoDB's default collation. */
const compareStrings = (left: string, right: string): number => (left < right ? -1 : left > right ? 1 : 0);
