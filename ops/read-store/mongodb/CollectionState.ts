import type { Collection as MongoCollection, Document } from 'mongodb';
import type { IndexSpec } from '../../../shared/read-store/ReadStore.ts';
import { UniqueIndexViolationError } from '../../../projections/read-store/UniqueIndexViolationError.ts';
import { createIndexes, indexDescription } from './mongoIndexes.ts';
import { storedName, type StoredDoc } from './storedFields.ts';
import { duplicateKeyIndex } from './uniqueViolation.ts';

interface DeclaredIndex {
  spec: IndexSpec;
  unique: boolean;
  ready: Promise<void>;
}

/**
 * What every handle of one collection shares in a process: the driver's collection and the
 * indexes declared so far. Query handlers ask for their collection, with its indexes, on every
 * request, so an index already declared costs nothing: only new ones go to the server.
 */
export class CollectionState {
  private readonly indexes = new Map<string, DeclaredIndex>();

  constructor(
    /** The collection's name in the port (without a rebuild's prefix). */
    readonly name: string,
    readonly driver: MongoCollection<StoredDoc>,
    /** Settles once the collection may be used (a staged one first copies the live indexes). */
    private readonly prepared: Promise<void> = Promise.resolve(),
  ) {}

  /**
   * Resolves once every index of `specs` exists; rejects if one could not be built (a unique index
   * over duplicates rejects with UniqueIndexViolationError). A failed declaration is forgotten,
   * so a later one tries again, as the memory store refuses a declaration and keeps none of it.
   */
  declare(specs: ReadonlyArray<IndexSpec>): Promise<void> {
    const fresh: IndexSpec[] = [];
    const names = new Set<string>();
    for (const spec of specs) {
      const description = indexDescription(spec);
      const name = description.name as string;
      names.add(name);
      const known = this.indexes.get(name);
      if (!known || (description.unique === true && !known.unique)) fresh.push(spec);
    }
    if (fresh.length > 0) {
      const ready = this.prepared.then(() => createIndexes(this.driver, fresh)).catch((error: unknown) => {
        throw this.buildFailure(error, fresh);
      });
      for (const spec of fresh) {
        const description = indexDescription(spec);
        const name = description.name as string;
        const previous = this.indexes.get(name);
        this.indexes.set(name, { spec, unique: description.unique === true, ready });
        // Forget it on failure (back to what was there), and mark the rejection handled here:
        // it reaches the caller through the handle's first operation.
        ready.catch(() => {
          if (this.indexes.get(name)?.ready !== ready) return;
          if (previous) this.indexes.set(name, previous);
          else this.indexes.delete(name);
        });
      }
    }
    const waits = [this.prepared, ...[...names].map((name) => this.indexes.get(name)?.ready ?? Promise.resolve())];
    const all = Promise.all(waits).then(() => undefined);
    all.catch(() => {});
    return all;
  }

  /** Every index declared so far: batch writes wait for them as single puts do. */
  async allReady(): Promise<void> {
    await this.prepared;
    await Promise.all([...this.indexes.values()].map((index) => index.ready));
  }

  /** The spec behind an index name, to describe a duplicate key in the port's terms. */
  specOf(indexName: string | null): IndexSpec | undefined {
    return indexName === null ? undefined : this.indexes.get(indexName)?.spec;
  }

  private buildFailure(error: unknown, specs: ReadonlyArray<IndexSpec>): unknown {
    const index = duplicateKeyIndex(error);
    if (index === null) return error;
    const spec = specs.find((candidate) => indexDescription(candidate).name === index) ?? specs.find((candidate) => candidate.unique === true);
    const keyValue = (error as { keyValue?: Document }).keyValue;
    const key = spec && keyValue ? JSON.stringify(spec.fields.map((field) => keyValue[storedName(field)] ?? null)) : '';
    return new UniqueIndexViolationError(this.name, spec?.fields ?? [], key, '', '');
  }
}
