import type { Position } from '../../shared/event-store/EventStore.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import type { Collection, Doc, ReadStore } from '../../shared/read-store/ReadStore.ts';
import { CHECKPOINTS, checkpointPosition } from './checkpoints.ts';
import { PositionWaiters } from './PositionWaiters.ts';

export interface CheckpointProgressOptions {
  /** The read store the projector writes (MongoDB), as this process opened it. */
  readStore: ReadStore;
  /** The projector's runner name: its checkpoint document's id. */
  name: string;
  /** How often the checkpoint is read while someone waits (default 20 ms). */
  pollIntervalMs?: number;
}

/**
 * Read-your-writes for a process that reads read models another process projects (the API role
 * of the distributed mode): waits until the projector's checkpoint reaches a position. The
 * projector commits documents and checkpoint together (BatchedApplier), so a reached checkpoint
 * means the documents are there. One poll loop serves every waiter and runs only while someone
 * waits: an idle API reads nothing. Checkpoints only grow (a rebuild swaps in one at least as far),
 * so the last one seen answers later waits for lower positions without a read.
 */
export class CheckpointProgress implements ReadModelProgress {
  private readonly checkpoints: Collection<Doc>;
  private readonly pollIntervalMs: number;
  private readonly waiters = new PositionWaiters();
  private seen: Position = 0n;
  private polling = false;

  constructor(private readonly options: CheckpointProgressOptions) {
    this.checkpoints = options.readStore.collection(CHECKPOINTS);
    this.pollIntervalMs = options.pollIntervalMs ?? 20;
  }

  /** The last checkpoint read (a lower bound of the projector's progress). */
  position(): Position {
    return this.seen;
  }

  waitFor(position: Position, timeoutMs: number): Promise<boolean> {
    if (this.seen >= position) return Promise.resolve(true);
    const reached = this.waiters.wait(position, timeoutMs);
    if (!this.polling) void this.poll();
    return reached;
  }

  private async poll(): Promise<void> {
    this.polling = true;
    try {
      while (this.waiters.size > 0) {
        try {
          const reached = checkpointPosition(await this.checkpoints.get(this.options.name));
          if (reached > this.seen) this.seen = reached;
        } catch {
          // A failed read (a failover, a swap in progress) is retried at the next tick; the
          // waiters' own timeouts bound how long they wait.
        }
        this.waiters.release(this.seen);
        if (this.waiters.size > 0) await new Promise((resolve) => setTimeout(resolve, this.pollIntervalMs));
      }
    } finally {
      this.polling = false;
    }
  }
}
