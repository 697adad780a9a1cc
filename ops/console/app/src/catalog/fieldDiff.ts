/** One field that differs between two revisions of an item. */
export interface FieldChange {
  field: string;
  change: 'added' | 'removed' | 'changed';
  before?: unknown;
  after?: unknown;
}

/**
 * What every revision stamps anew (its id, version, author and time): the revision's header,
 * not a change a user made, so left out of the diff.
 */
export const REVISION_HEADER = new Set(['laui', 'item_laui', 'version', 'created_at', 'created_by', 'updated_at', 'updated_by']);

/** JSON with object keys sorted: two values are the same when their canonical forms are. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner as Record<string, unknown>).sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0)))
      : inner,
  );

/** An absent field and a null one read the same in a form: neither counts as a change against the other. */
const present = (record: Record<string, unknown> | null, field: string): boolean => record !== null && record[field] !== undefined && record[field] !== null;

/**
 * The field diff of a revision against the previous one (null for the first revision: every field
 * it has is added), by field name, the revision header left out.
 */
export const fieldDiff = (before: Record<string, unknown> | null, after: Record<string, unknown>): FieldChange[] => {
  const fields = new Set([...Object.keys(before ?? {}), ...Object.keys(after)]);
  const changes: FieldChange[] = [];
  for (const field of [...fields].sort()) {
    if (REVISION_HEADER.has(field)) continue;
    const was = present(before, field);
    const is = present(after, field);
    if (!was && is) changes.push({ field, change: 'added', after: after[field] });
    else if (was && !is) changes.push({ field, change: 'removed', before: before?.[field] });
    else if (was && is && canonical(before?.[field]) !== canonical(after[field])) changes.push({ field, change: 'changed', before: before?.[field], after: after[field] });
  }
  return changes;
};
