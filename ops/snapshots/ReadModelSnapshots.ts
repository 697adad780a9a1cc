import type { Position } from '../../shared/event-store/EventStore.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import type { MemoryReadStore } from '../../projections/read-store/MemoryReadStore.ts';
import type { ProjectionRunner } from '../../projections/runner/ProjectionRunner.ts';
import { loadLatestSnapshot, readModelVersion, writeSnapshot } from './snapshotFile.ts';

export interface ReadModelSnapshotsOptions {
  /** DATA_DIR/snapshots. */
  dir: string;
  /** The projection runner's name: its checkpoint is what a snapshot resumes from. */
  runner: string;
  store: MemoryReadStore;
  projections: ProjectionRunner;
  /** The log's last position at start: a snapshot past it is refused. */
  head(): Promise<Position>;
  /** The id of the event at a position of the log, null when there is none (EventStore.readAll). */
  eventIdAt(position: Position): Promise<string | null>;
  /** SNAPSHOT_INTERVAL_EVENTS: a snapshot once the read models are this far past the last one. */
  intervalEvents: number;
  logger: Logger;
  announce(message: string): void;
  /** How often the distance is looked at (ms). */
  checkEveryMs?: number;
}

/**
 * The embedded read models' snapshots (issue 35): loaded at start before the runner replays the rest
 * of the log, written in the background every SNAPSHOT_INTERVAL_EVENTS and at a graceful stop.
 */
export class ReadModelSnapshots {
  private version: string | null = null;
  private last: Position = 0n;
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  private indexesPending = false;
  /**
   * While the background build runs after a load: a capture then would decode every document still
   * undecoded in one synchronous pass (seconds at a million items), where the build decodes them in
   * slices; the interval's snapshots wait for it (a graceful stop does not).
   */
  private building = false;

  constructor(private readonly options: ReadModelSnapshotsOptions) {}

  /** Before the runner starts: the newest usable snapshot's documents and checkpoint, or nothing (the log is replayed whole). */
  async load(): Promise<void> {
    this.version = await readModelVersion();
    const { store, logger } = this.options;
    const started = performance.now();
    const loaded = await loadLatestSnapshot({
      dir: this.options.dir,
      version: this.version,
      runner: this.options.runner,
      head: await this.options.head(),
      eventIdAt: (position) => this.options.eventIdAt(position),
      restore: (collection, chunk) => store.restoreChunk(collection, chunk),
      clear: () => store.clear(),
      skipped: (file, reason) => {
        const message = `Read-model snapshot ${file} not used (${reason}); the read models are rebuilt from the log`;
        logger.log({ level: 'warning', category: 'API', message });
        this.options.announce(message);
      },
    });
    if (loaded === null) return;
    this.last = loaded.position;
    this.indexesPending = true;
    const message = `Read models loaded from the snapshot at position ${loaded.position} (${loaded.documents} documents, ${((performance.now() - started) / 1000).toFixed(1)} s); replaying the log after it`;
    logger.log({ level: 'info', category: 'API', message });
    this.options.announce(message);
  }

  /**
   * Snapshots in the background from now on; after a load, the indexes the load left out are built
   * first, in slices (MemoryReadStore.buildIndexes): the service answers meanwhile.
   */
  start(): void {
    if (this.indexesPending) {
      this.indexesPending = false;
      const started = performance.now();
      this.building = true;
      void this.options.store.buildIndexes().finally(() => (this.building = false)).then(
        () => {
          const message = `Read-model indexes built after the snapshot's load (${((performance.now() - started) / 1000).toFixed(1)} s)`;
          this.options.logger.log({ level: 'info', category: 'API', message });
          this.options.announce(message);
        },
        (error: unknown) => this.options.logger.log({ level: 'error', category: 'API', message: `Read-model indexes not built (queries scan instead): ${String(error)}` }),
      );
    }
    this.timer = setInterval(() => {
      if (this.writing === null && !this.building && this.options.projections.position() - this.last >= BigInt(this.options.intervalEvents)) void this.take();
    }, this.options.checkEveryMs ?? 1_000);
    this.timer.unref();
  }

  /**
   * One snapshot of the read models as they are now: captured between two events (none half
   * applied) in one synchronous pass with the runner's position, then written while the service
   * goes on.
   */
  take(): Promise<void> {
    if (this.writing !== null) return this.writing;
    const { projections, store } = this.options;
    let position = projections.position();
    const started = performance.now();
    this.writing = (async () => {
      try {
        const captured = await projections.atRest(() => ({ position: projections.position(), collections: store.capture() }));
        position = captured.position;
        const version = this.version ?? (await readModelVersion());
        const eventId = position === 0n ? null : await this.options.eventIdAt(position);
        const written = await writeSnapshot({ dir: this.options.dir, version, runner: this.options.runner, position, eventId, collections: captured.collections });
        this.last = position;
        this.options.logger.log({
          level: 'info',
          category: 'API',
          message: `Read-model snapshot at position ${position}: ${written.documents} documents, ${written.bytes} bytes, ${((performance.now() - started) / 1000).toFixed(1)} s (${written.file})`,
        });
      } catch (error) {
        this.options.logger.log({ level: 'error', category: 'API', message: `Read-model snapshot at position ${position} failed (the next start replays more of the log): ${String(error)}` });
      } finally {
        this.writing = null;
      }
    })();
    return this.writing;
  }

  /** At a graceful stop: the one being written finishes, and a last one is taken when the models moved since. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.writing) await this.writing;
    if (this.options.projections.position() > this.last) await this.take();
  }
}
