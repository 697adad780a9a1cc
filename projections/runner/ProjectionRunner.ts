import { START, type EventStore, type Position, type RecordedEvent, type Subscription } from '../../shared/event-store/EventStore.ts';
import type { Collection, Doc, DocWrite, ReadStore } from '../../shared/read-store/ReadStore.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import { BatchedApplier } from './BatchedApplier.ts';
import { CHECKPOINTS, checkpointPosition } from './checkpoints.ts';
import { PositionWaiters } from './PositionWaiters.ts';
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
  /** With a store that batches writes (MongoDB): at most this many events per commit. */
  batchSize?: number;
  /**
   * Told of each event of the types they handle once it is applied, from the moment the runner has
   * caught up with the log (never during a start's replay, which must stay as fast as it can be):
   * caches that keep up with the log as it grows, such as the as-of fold snapshots.
   */
  followers?: ReadonlyArray<LogFollower>;
}

/** A cache that follows the live log (ProjectionRunnerOptions.followers); `follow` must not throw or block. */
export interface LogFollower {
  readonly handles: ReadonlySet<string>;
  follow(event: RecordedEvent): void;
}

interface Route {
  projection: Projection;
  collection: Collection<Doc>;
  /** The collection's name, for batched writes. */
  name: string;
}

/** setTimeout's largest delay: "wait as long as it takes" for a rebuild's last stretch. */
const NO_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * Reads `$all` from the saved checkpoint and applies every projection; one runner per process
 * role. Idempotent per document: an event at or below a document's `_position` is skipped, so a
 * crash between a document write and the checkpoint write replays safely.
 *
 * Two write paths. A store without batches (memory) gets a peek and an adopt per event and a
 * checkpoint every `checkpointEvery` events. A store with batches (MongoDB) gets the events in
 * batches, each committed together with the checkpoint (BatchedApplier): atomically on a
 * replica set, so a restart resumes exactly where the documents are.
 */
export class ProjectionRunner implements ReadModelProgress {
  private processed: Position = START;
  private subscription: Subscription | null = null;
  private readonly waiters = new PositionWaiters();
  /** True while an event is being applied; `atRest` callbacks wait for it to end. */
  private applying = false;
  private readonly atRestQueue: Array<() => void> = [];
  private readonly byType = new Map<string, Route[]>();
  private readonly checkpoints: Collection<Doc>;
  private readonly batched: BatchedApplier | null;
  private sinceCheckpoint = 0;
  private failed: { error: unknown } | null = null;
  private rejectStart: ((error: Error) => void) | null = null;

  constructor(private readonly options: ProjectionRunnerOptions) {
    for (const projection of options.projections) {
      const collection = options.readStore.collection<Doc>(projection.collection, projection.indexes);
      const route = { projection, collection, name: projection.collection };
      for (const type of projection.handles) this.byType.set(type, [...(this.byType.get(type) ?? []), route]);
    }
    // Asked for after the read models: a rebuild swaps collections in the order of first use,
    // and the checkpoint must not be swapped in before the models it covers.
    this.checkpoints = options.readStore.collection(CHECKPOINTS);
    const batches = options.readStore.batches;
    this.batched = batches
      ? new BatchedApplier({
          batches,
          routes: (type) => this.byType.get(type)?.map(({ projection, name }) => ({ projection, collection: name })),
          checkpoint: (position) => this.checkpointWrite(position),
          batchSize: options.batchSize ?? 500,
          onCommitted: (position) => this.advance(position),
          onFailure: (error) => this.fail(error),
          replayOneByOne: (events) => this.applyOneByOne(events),
        })
      : null;
  }

  /** Resolves once the read models have caught up with the log as it was at start. */
  async start(): Promise<void> {
    const { eventStore, name } = this.options;
    this.failed = null;
    this.batched?.reset();
    this.processed = checkpointPosition(await this.checkpoints.get(name));
    const head = await eventStore.headPosition();
    const followers = this.options.followers ?? [];
    let live = false;
    const startedAt = Date.now();
    let processedCount = 0;
    let lastReport = startedAt;
    await new Promise<void>((resolve, reject) => {
      this.rejectStart = reject;
      this.subscription = eventStore.subscribeToAll({
        after: this.processed,
        onEvent: async (event) => {
          this.applying = true;
          try {
            if (this.batched) await this.batched.add(event);
            else await this.apply(event);
          } finally {
            this.applying = false;
            for (const run of this.atRestQueue.splice(0)) run();
          }
          if (live) for (const follower of followers) if (follower.handles.has(event.type)) follower.follow(event);
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
          live = true;
          void this.saveCheckpoint().then(resolve, reject);
        },
        onError: (error) => this.fail(error),
      });
    }).finally(() => {
      this.rejectStart = null;
    });
  }

  position(): Position {
    return this.processed;
  }

  /**
   * Runs `fn` between two events, none half applied (a snapshot's capture, ops/snapshots): at once
   * when no event is being applied, else as soon as the one being applied is done.
   */
  atRest<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // Synchronously when idle: a microtask later, the next event may be under way.
      const run = () => {
        try {
          resolve(fn());
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      };
      if (this.applying) this.atRestQueue.push(run);
      else run();
    });
  }

  /** Read-your-writes: resolves true once `position` is applied, false after `timeoutMs`. */
  waitFor(position: Position, timeoutMs: number): Promise<boolean> {
    if (this.processed >= position) return Promise.resolve(true);
    return this.waiters.wait(position, timeoutMs);
  }

  async stop(): Promise<void> {
    await this.pause();
    this.waiters.dropAll();
  }

  /**
   * Rebuilds every read model into fresh collections (ReadStore.rebuild) and swaps them in, so
   * readers never see a half-built model. A running runner keeps the live models current while
   * the rebuild replays the log, then pauses; the rebuild catches up to where the live models
   * stopped (no reader may afterwards see an older position than it saw), its models are swapped
   * in with its checkpoint, and the runner resumes from there. If the rebuild fails, the staged
   * collections are dropped and the live ones go on as they were.
   */
  async rebuild(): Promise<void> {
    const wasRunning = this.subscription !== null;
    const staged = await this.options.readStore.rebuild();
    // The live runner goes on telling the followers; the builder's replay would only repeat it.
    const builder = new ProjectionRunner({ ...this.options, readStore: staged, followers: [] });
    let paused = false;
    try {
      await builder.start();
      if (wasRunning) {
        await this.pause();
        paused = true;
        await builder.waitFor(this.processed, NO_TIMEOUT_MS);
      }
      await builder.stop();
      await staged.swap();
    } catch (error) {
      await builder.stop().catch(() => {});
      await staged.discard();
      if (paused) await this.start();
      throw error;
    }
    if (wasRunning) await this.start();
    else this.processed = checkpointPosition(await this.checkpoints.get(this.options.name));
  }

  /** Stops reading the log and saves the checkpoint; waiters keep waiting for a later start. */
  private async pause(): Promise<void> {
    await this.subscription?.close();
    this.subscription = null;
    if (!this.failed) await this.saveCheckpoint();
  }

  /** Stops on the first failure: skipping an event would leave a read model wrong. */
  private fail(error: unknown): void {
    if (this.failed) return;
    this.failed = { error };
    this.options.onError?.(error);
    this.rejectStart?.(error instanceof Error ? error : new Error(String(error)));
    void this.subscription?.close();
  }

  private async apply(event: RecordedEvent): Promise<void> {
    const routes = this.byType.get(event.type);
    if (routes) {
      const position = Number(event.position);
      for (const { projection, collection } of routes) {
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
    this.sinceCheckpoint += 1;
    if (this.sinceCheckpoint >= (this.options.checkpointEvery ?? 10_000)) {
      this.processed = event.position;
      // Not saveCheckpoint: a batched runner's one-by-one replay runs inside a commit.
      await this.writeCheckpoint();
    }
    this.advance(event.position);
  }

  private async applyOneByOne(events: ReadonlyArray<RecordedEvent>): Promise<void> {
    for (const event of events) await this.apply(event);
    await this.writeCheckpoint();
  }

  private advance(position: Position): void {
    this.processed = position;
    if (this.waiters.size > 0) this.waiters.release(position);
  }

  private checkpointWrite(position: Position): DocWrite {
    const name = this.options.name;
    return { collection: CHECKPOINTS, id: name, doc: { id: name, position: position.toString() } };
  }

  /** Batched: commits what is pending (its checkpoint with it). One by one: writes the checkpoint. */
  private saveCheckpoint(): Promise<void> {
    return this.batched ? this.batched.flush() : this.writeCheckpoint();
  }

  private async writeCheckpoint(): Promise<void> {
    this.sinceCheckpoint = 0;
    const { doc } = this.checkpointWrite(this.processed);
    if (doc) await this.checkpoints.put(doc);
  }
}
