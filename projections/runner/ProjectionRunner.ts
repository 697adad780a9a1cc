import { START, type EventStore, type Position, type RecordedEvent, type Subscription } from '../../shared/event-store/EventStore.ts';
import type { Collection, Doc, ReadStore } from '../../shared/read-store/ReadStore.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import { APPLIED_POSITION, type Projection } from './Projection.ts';

export interface RebuildProgress {
  processed: number;
  position: Position;
  head: Position;
  eventsPerSecond: number;
}

export interface ProjectionRunnerOptions {
  name: string;
  eventStore: EventStore;
  readStore: ReadStore;
  projections: ReadonlyArray<Projection>;
  /** Called about every second while catching up, so long rebuilds show progress. */
  onProgress?(progress: RebuildProgress): void;
  onError?(error: unknown): void;
  /** Checkpoints are saved every this many events and whenever the runner catches up. */
  checkpointEvery?: number;
}

interface Waiter {
  position: Position;
  resolve(reached: boolean): void;
}

const CHECKPOINTS = '_checkpoints';

/**
 * Reads `$all` from the saved checkpoint and applies every projection; one runner per process
 * role. Idempotent per document: an event at or below a document's `_position` is skipped, so a
 * crash between a document write and the checkpoint write replays safely.
 */
export class ProjectionRunner implements ReadModelProgress {
  private processed: Position = START;
  private subscription: Subscription | null = null;
  private readonly waiters: Waiter[] = [];
  private readonly byType = new Map<string, Array<{ projection: Projection; collection: Collection<Doc> }>>();
  private sinceCheckpoint = 0;

  constructor(private readonly options: ProjectionRunnerOptions) {
    for (const projection of options.projections) {
      const collection = options.readStore.collection<Doc>(projection.collection, projection.indexes);
      for (const type of projection.handles) this.byType.set(type, [...(this.byType.get(type) ?? []), { projection, collection }]);
    }
  }

  /** Resolves once the read models have caught up with the log as it was at start. */
  async start(): Promise<void> {
    const { eventStore, readStore, name } = this.options;
    const checkpoint = await readStore.collection(CHECKPOINTS).get(name);
    this.processed = typeof checkpoint?.position === 'string' ? BigInt(checkpoint.position) : START;
    const head = await eventStore.headPosition();
    const startedAt = Date.now();
    let processedCount = 0;
    let lastReport = startedAt;
    await new Promise<void>((resolve, reject) => {
      this.subscription = eventStore.subscribeToAll({
        after: this.processed,
        onEvent: async (event) => {
          await this.apply(event);
          processedCount += 1;
          const now = Date.now();
          if (this.options.onProgress && event.position < head && now - lastReport >= 1000) {
            lastReport = now;
            this.options.onProgress({
              processed: processedCount,
              position: event.position,
              head,
              eventsPerSecond: Math.round((processedCount * 1000) / (now - startedAt)),
            });
          }
        },
        onCaughtUp: () => {
          void this.saveCheckpoint().then(resolve, reject);
        },
        onError: (error) => {
          this.options.onError?.(error);
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      });
    });
  }

  position(): Position {
    return this.processed;
  }

  /** Read-your-writes: resolves true once `position` is applied, false after `timeoutMs`. */
  waitFor(position: Position, timeoutMs: number): Promise<boolean> {
    if (this.processed >= position) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        position,
        resolve: (reached) => {
          clearTimeout(timer);
          resolve(reached);
        },
      };
      const timer = setTimeout(() => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        resolve(false);
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  async stop(): Promise<void> {
    await this.subscription?.close();
    this.subscription = null;
    await this.saveCheckpoint();
    for (const waiter of this.waiters.splice(0)) waiter.resolve(false);
  }

  private async apply(event: RecordedEvent): Promise<void> {
    const projections = this.byType.get(event.type);
    if (projections) {
      const position = Number(event.position);
      for (const { projection, collection } of projections) {
        const id = projection.documentId(event);
        if (id === null) continue;
        const current = await collection.peek(id);
        if (current && typeof current[APPLIED_POSITION] === 'number' && current[APPLIED_POSITION] >= position) continue;
        const next = projection.evolve(current, event);
        if (next === null) {
          if (current) await collection.delete(id);
        } else if (next !== current) {
          // evolve returned a fresh object: the runner owns it and may stamp it without a copy.
          (next as Doc)[APPLIED_POSITION] = position;
          await collection.adopt(next);
        }
      }
    }
    this.processed = event.position;
    this.sinceCheckpoint += 1;
    if (this.sinceCheckpoint >= (this.options.checkpointEvery ?? 10_000)) await this.saveCheckpoint();
    if (this.waiters.length > 0) this.releaseWaiters();
  }

  private releaseWaiters(): void {
    for (let index = this.waiters.length - 1; index >= 0; index -= 1) {
      const waiter = this.waiters[index];
      if (waiter && waiter.position <= this.processed) {
        this.waiters.splice(index, 1);
        waiter.resolve(true);
      }
    }
  }

  private async saveCheckpoint(): Promise<void> {
    this.sinceCheckpoint = 0;
    await this.options.readStore.collection(CHECKPOINTS).put({ id: this.options.name, position: this.processed.toString() });
  }
}
