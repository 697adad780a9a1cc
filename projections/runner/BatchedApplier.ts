import type { Position, RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { BatchWrites, Doc, DocWrite } from '../../shared/read-store/ReadStore.ts';
import { UniqueIndexViolationError } from '../read-store/UniqueIndexViolationError.ts';
import { APPLIED_POSITION, type Projection } from './Projection.ts';

export interface BatchedApplierDeps {
  batches: BatchWrites;
  /** The projections an event type goes to, each with its collection's name. */
  routes(type: string): ReadonlyArray<{ projection: Projection; collection: string }> | undefined;
  /** The checkpoint document, written last in every commit. */
  checkpoint(position: Position): DocWrite;
  /** At most this many events go into one commit. */
  batchSize: number;
  /** The batch up to `position` is stored. */
  onCommitted(position: Position): void;
  /** A commit scheduled in the background failed: the runner must stop. */
  onFailure(error: unknown): void;
  /**
   * The events of a commit refused for a unique index, applied one by one: reordering writes
   * inside a batch can break a unique index transiently (A frees a key that B takes), which
   * the write-per-event path never does. A real violation fails there too.
   */
  replayOneByOne(events: ReadonlyArray<RecordedEvent>): Promise<void>;
}

/**
 * The projection runner's path for stores where a round trip per document dominates (MongoDB).
 * Events are gathered while the subscription delivers them and committed together: one read of
 * the touched documents per collection, one evolve per event in log order, one commit of the
 * documents that changed plus the checkpoint. A batch closes at `batchSize` events (the
 * subscription then waits for the commit) or as soon as the subscription pauses (a macrotask
 * later), so live events are not held back for a batch to fill.
 */
export class BatchedApplier {
  private pending: RecordedEvent[] = [];
  private chain: Promise<void> = Promise.resolve();
  private scheduled = false;
  private failure: { error: unknown } | null = null;

  constructor(private readonly deps: BatchedApplierDeps) {}

  /** A fresh start (after a failure or a pause): nothing pending, no failure remembered. */
  reset(): void {
    this.pending = [];
    this.failure = null;
  }

  /** The subscription's onEvent. */
  async add(event: RecordedEvent): Promise<void> {
    if (this.failure) throw this.failure.error;
    this.pending.push(event);
    if (this.pending.length >= this.deps.batchSize) return this.flush();
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.flush().catch((error: unknown) => this.deps.onFailure(error));
      });
    }
  }

  /** Commits the pending events; commits never overlap and go in log order. */
  flush(): Promise<void> {
    const run = this.chain.then(() => this.commitPending());
    this.chain = run.catch(() => {});
    return run;
  }

  /**
   * After a failed commit nothing more may be committed: its events are not stored, and a later
   * batch's checkpoint would step over them for good. The runner restarts from the checkpoint.
   */
  private async commitPending(): Promise<void> {
    if (this.failure) throw this.failure.error;
    try {
      await this.commitBatch();
    } catch (error) {
      this.failure ??= { error };
      throw error;
    }
  }

  private async commitBatch(): Promise<void> {
    const events = this.pending.splice(0);
    const last = events[events.length - 1];
    if (!last) return;
    const states = await this.load(events);
    const changed = this.evolve(events, states);
    const writes: DocWrite[] = [];
    for (const [collection, ids] of changed) {
      const docs = states.get(collection);
      for (const id of ids) writes.push({ collection, id, doc: docs?.get(id) ?? null });
    }
    writes.push(this.deps.checkpoint(last.position));
    try {
      await this.deps.batches.commit(writes);
    } catch (error) {
      if (!(error instanceof UniqueIndexViolationError)) throw error;
      await this.deps.replayOneByOne(events);
      return;
    }
    this.deps.onCommitted(last.position);
  }

  /** The stored state of every document the events touch: one read per collection. */
  private async load(events: ReadonlyArray<RecordedEvent>): Promise<Map<string, Map<string, Doc | null>>> {
    const wanted = new Map<string, Set<string>>();
    for (const event of events) {
      for (const { projection, collection } of this.deps.routes(event.type) ?? []) {
        const id = projection.documentId(event);
        if (id === null) continue;
        let ids = wanted.get(collection);
        if (!ids) wanted.set(collection, (ids = new Set()));
        ids.add(id);
      }
    }
    const states = new Map<string, Map<string, Doc | null>>();
    await Promise.all(
      [...wanted].map(async ([collection, ids]) => {
        const found = await this.deps.batches.getMany(collection, [...ids]);
        states.set(collection, new Map([...ids].map((id) => [id, found.get(id) ?? null])));
      }),
    );
    return states;
  }

  /** Applies the events in order to the loaded states; returns the ids that changed, by collection. */
  private evolve(events: ReadonlyArray<RecordedEvent>, states: Map<string, Map<string, Doc | null>>): Map<string, Set<string>> {
    const changed = new Map<string, Set<string>>();
    for (const event of events) {
      const position = Number(event.position);
      for (const { projection, collection } of this.deps.routes(event.type) ?? []) {
        const id = projection.documentId(event);
        const docs = states.get(collection);
        if (id === null || !docs) continue;
        const current = docs.get(id) ?? null;
        // Idempotent as the one-by-one path: an event the document has seen is skipped.
        if (current && typeof current[APPLIED_POSITION] === 'number' && current[APPLIED_POSITION] >= position) continue;
        const next = projection.evolve(current, event);
        if (next === current || (next === null && current === null)) continue;
        if (next !== null) (next as Doc)[APPLIED_POSITION] = position;
        docs.set(id, next);
        let ids = changed.get(collection);
        if (!ids) changed.set(collection, (ids = new Set()));
        ids.add(id);
      }
    }
    return changed;
  }
}
