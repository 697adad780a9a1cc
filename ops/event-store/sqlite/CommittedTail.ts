/** One stored event as the store reads it back: data and metadata still JSON. */
export interface StoredEvent {
  position: bigint;
  streamId: string;
  revision: number;
  id: string;
  type: string;
  data: string;
  metadata: string;
  recordedAt: string;
}

/**
 * The events this store committed last, kept so that its subscriptions (projections, liveness,
 * every catch-up reader) read them back from memory instead of selecting and copying rows SQLite
 * was just handed: reading back was ~7% of the event loop under task load.
 *
 * It only answers when it knows the answer is exactly what SQLite would return: it holds a run of
 * consecutive positions, and positions are unique, so no event of anyone (the CLI appending to
 * the same file) can sit among them. An event whose position does not follow the last one held
 * starts a new run. Anything before the run, or after its newest event, is read from SQLite: the
 * tail answers a prefix of the page at most.
 */
export class CommittedTail {
  private events: StoredEvent[] = [];
  /** Index of the oldest event still held: dropping from the front without shifting each time. */
  private first = 0;

  // Enough for what subscriptions read right after a commit; more only keeps events alive for the GC to copy.
  constructor(private readonly capacity = 1024) {}

  /** Events of a committed transaction, in position order. */
  add(event: StoredEvent): void {
    const last = this.events.at(-1);
    if (last !== undefined && event.position !== last.position + 1n) {
      this.events = [];
      this.first = 0;
    }
    this.events.push(event);
    if (this.events.length - this.first > this.capacity) this.first += 1;
    if (this.first >= this.capacity) {
      this.events = this.events.slice(this.first);
      this.first = 0;
    }
  }

  /** Position of the newest event held: the last this store committed, as far as it knows. */
  newest(): bigint | undefined {
    return this.events.at(-1)?.position;
  }

  /**
   * The first of up to `maxCount` events after `after` that it holds (events after its newest one may
   * exist), or undefined when it cannot tell what follows `after`.
   */
  after(after: bigint, maxCount: number): StoredEvent[] | undefined {
    const oldest = this.events[this.first];
    const newest = this.events.at(-1);
    if (oldest === undefined || newest === undefined) return undefined;
    const next = after + 1n;
    if (next < oldest.position || next > newest.position) return undefined;
    const from = this.first + Number(next - oldest.position);
    return this.events.slice(from, from + maxCount);
  }
}
