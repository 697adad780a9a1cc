import type { KafkaMessage } from 'kafkajs';
import { Fifo } from '../../../shared/Fifo.ts';
import { InFlight } from '../InFlight.ts';

export interface PartitionLanesDeps {
  /** Partitions handled at once (one record at a time each). */
  concurrency: number;
  /**
   * Handles one record to its end (handled, or dead-lettered): the offset is then committed.
   * Rejects when it gave up because the lanes are closing: the record stays uncommitted.
   */
  handle(partition: number, message: KafkaMessage): Promise<void>;
  /** Commits, per partition, the offset of the next record to read. */
  commit(offsets: ReadonlyArray<{ partition: number; offset: string }>): Promise<void>;
  /** Stops and restarts fetching a partition whose lane holds enough records already. */
  pause(partition: number): void;
  resume(partition: number): void;
  log(level: 'info' | 'warning' | 'error', message: string): void;
  /**
   * How long handled offsets gather before one commit request carries them all. A crash loses at
   * most this much of commits: those records are delivered again (at least once). Default 100 ms.
   */
  commitDelayMs?: number;
  /** Wait before a record whose handling failed unexpectedly (not its handler: a dead letter that could not be written) is tried again. */
  retryDelayMs?: number;
}

/** Records a lane holds before its partition's fetching pauses. */
const MAX_QUEUED = 256;

interface Lane {
  partition: number;
  /** Records fetched, not started. */
  queue: Fifo<KafkaMessage>;
  /** The record being handled, or waiting to be tried again: off the queue, which a rebalance replaces. */
  head: KafkaMessage | null;
  running: boolean;
  /** Records below this offset were queued, are running or were handled here: a redelivery of them is dropped. */
  next: bigint;
  /** The offset after the last record handled here: where the lane resumes after a rebalance. */
  handled: bigint;
  paused: boolean;
  retry: NodeJS.Timeout | undefined;
}

/**
 * What kafkajs leaves out: its fetch loop waits until every record of the last fetch was handled
 * before it fetches again, so one long handler (a task running for minutes) would hold every
 * other partition of the consumer. Here a fetched record only joins its partition's lane; lanes
 * run one record at a time each (a key's partition stays in order), up to `concurrency` lanes at
 * once, and each handled record's offset is committed (kafkajs's auto-commit is off: it would
 * commit records fetched but not handled).
 *
 * After each rebalance kafkajs fetches every assigned partition again from its committed offset:
 * the lanes drop what they had queued (it comes again) and skip what they handled or run already
 * (a commit not yet made is made then). A partition taken away while its record runs lets the
 * record finish without committing it: its new owner may handle it too (at least once).
 */
export class PartitionLanes {
  private readonly lanes = new Map<number, Lane>();
  private readonly ready = new Set<Lane>();
  private readonly inFlight = new InFlight();
  private assigned: ReadonlySet<number> = new Set();
  /** Per partition, the offset to commit (the next to read), not yet acknowledged by the broker. */
  private readonly uncommitted = new Map<number, bigint>();
  private committing: Promise<void> | null = null;
  private commitAgain = false;
  /** The pending delayed commit, or the retry of a failed one. */
  private commitTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly deps: PartitionLanesDeps) {}

  /** A fetched record: queued behind its partition's earlier ones, or dropped when seen here already. */
  push(partition: number, message: KafkaMessage): void {
    if (this.closed) return;
    const lane = this.lane(partition);
    const offset = BigInt(message.offset);
    if (offset < lane.next) return;
    lane.next = offset + 1n;
    lane.queue.push(message);
    if (lane.queue.length >= MAX_QUEUED && !lane.paused) {
      lane.paused = true;
      this.deps.pause(partition);
    }
    if (lane.head === null) this.markReady(lane);
  }

  /**
   * The member's partitions after a (re)join: kafkajs fetches each from its committed offset
   * again, so queued records are dropped (they come again) and paused partitions resumed.
   */
  assign(partitions: ReadonlyArray<number>): void {
    this.assigned = new Set(partitions);
    for (const lane of this.lanes.values()) {
      this.ready.delete(lane);
      lane.queue = new Fifo();
      if (!lane.running && !this.assigned.has(lane.partition)) {
        // A record waiting to be tried again on a partition now another member's: it is theirs.
        clearTimeout(lane.retry);
        lane.retry = undefined;
        lane.head = null;
      }
      lane.next = lane.head === null ? lane.handled : BigInt(lane.head.offset) + 1n;
      if (lane.paused) {
        lane.paused = false;
        this.deps.resume(lane.partition);
      }
    }
    // What was handled but not committed under the last assignment is committed now, if still ours.
    for (const partition of this.uncommitted.keys()) if (!this.assigned.has(partition)) this.uncommitted.delete(partition);
    this.flushCommits();
  }

  /** Starts nothing more; resolves once running records settled and what was handled is committed. */
  async close(): Promise<void> {
    this.closed = true;
    for (const lane of this.lanes.values()) clearTimeout(lane.retry);
    this.ready.clear();
    await this.inFlight.idle();
    clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    await this.committing;
    if (this.uncommitted.size > 0) await this.commitNow().catch(() => undefined);
  }

  private lane(partition: number): Lane {
    let lane = this.lanes.get(partition);
    if (!lane) {
      lane = { partition, queue: new Fifo(), head: null, running: false, next: 0n, handled: 0n, paused: false, retry: undefined };
      this.lanes.set(partition, lane);
    }
    return lane;
  }

  private markReady(lane: Lane): void {
    if (lane.running || (lane.head === null && lane.queue.length === 0)) return;
    this.ready.add(lane);
    this.drain();
  }

  private drain(): void {
    while (!this.closed && this.inFlight.size < this.deps.concurrency) {
      const [lane] = this.ready;
      if (!lane) return;
      this.ready.delete(lane);
      this.run(lane);
    }
  }

  private run(lane: Lane): void {
    lane.head ??= lane.queue.shift() ?? null;
    const message = lane.head;
    if (!message) return;
    lane.running = true;
    this.inFlight.begin();
    Promise.resolve()
      .then(() => this.deps.handle(lane.partition, message))
      .then(
        () => this.settle(lane, message, true),
        (error: unknown) => this.settle(lane, message, false, error),
      );
  }

  private settle(lane: Lane, message: KafkaMessage, handled: boolean, error?: unknown): void {
    lane.running = false;
    const offset = BigInt(message.offset);
    if (handled) {
      lane.head = null;
      lane.handled = offset + 1n;
      if (this.assigned.has(lane.partition)) {
        this.uncommitted.set(lane.partition, lane.handled);
        this.commitSoon();
      }
    } else if (!this.closed) {
      // Not the handler (its failures are retried and dead-lettered inside `handle`): writing the
      // dead letter failed, say. The record stays at the head of its lane and is tried again.
      this.deps.log('error', `Handling record ${lane.partition}/${offset} failed, trying again: ${error instanceof Error ? error.message : String(error)}`);
      lane.retry = setTimeout(() => {
        lane.retry = undefined;
        this.markReady(lane);
      }, this.deps.retryDelayMs ?? 1_000);
      lane.retry.unref();
    }
    if (lane.paused && lane.queue.length <= MAX_QUEUED / 2) {
      lane.paused = false;
      this.deps.resume(lane.partition);
    }
    this.inFlight.end();
    if (lane.retry === undefined && !this.closed) this.markReady(lane);
    this.drain();
  }

  /** Handled offsets are committed together a little later: one request for many records under load. */
  private commitSoon(): void {
    if (this.commitTimer !== undefined || this.closed) return;
    this.commitTimer = setTimeout(() => {
      this.commitTimer = undefined;
      this.flushCommits();
    }, this.deps.commitDelayMs ?? 100);
    this.commitTimer.unref();
  }

  /** One commit request at a time; completions meanwhile are committed together right after. */
  private flushCommits(): void {
    clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    if (this.uncommitted.size === 0) return;
    if (this.committing) {
      this.commitAgain = true;
      return;
    }
    this.committing = this.commitNow()
      .catch((error: unknown) => {
        // During a rebalance, say: the next assignment commits it (if the partition is still ours).
        this.deps.log('warning', `Committing offsets failed, trying again: ${error instanceof Error ? error.message : String(error)}`);
        if (this.closed) return;
        clearTimeout(this.commitTimer);
        this.commitTimer = setTimeout(() => this.flushCommits(), this.deps.retryDelayMs ?? 1_000);
        this.commitTimer.unref();
      })
      .finally(() => {
        this.committing = null;
        if (this.commitAgain) {
          this.commitAgain = false;
          this.flushCommits();
        }
      });
  }

  private async commitNow(): Promise<void> {
    const offsets = [...this.uncommitted].map(([partition, offset]) => ({ partition, offset: offset.toString() }));
    await this.deps.commit(offsets);
    // Acknowledged: forget what a later completion has not replaced meanwhile.
    for (const { partition, offset } of offsets) if (this.uncommitted.get(partition)?.toString() === offset) this.uncommitted.delete(partition);
  }
}
