/**
 * A put that would give two documents the same key in a unique index. Every read-store adapter
 * throws this one class (the MongoDB adapter maps duplicate-key error 11000 to it), so projections
 * can catch it without knowing which mode runs. The collection is left as it was before the put.
 */
export class UniqueIndexViolationError extends Error {
  constructor(
    readonly collection: string,
    readonly fields: ReadonlyArray<string>,
    /** The indexed values, as the JSON-encoded tuple used for the index key. */
    readonly key: string,
    /** The document that already holds the key. */
    readonly existingId: string,
    /** The document whose put was refused. */
    readonly rejectedId: string,
  ) {
    super(
      `Unique index (${fields.join(', ')}) of ${collection}: ${rejectedId} has ${key}, already held by ${existingId}`,
    );
    this.name = 'UniqueIndexViolationError';
  }
}
