import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../../../shared/clock.ts';
import type {
  AppendResult,
  EventStore,
  ExpectedRevision,
  Position,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StreamAppend,
  SubscribeOptions,
  Subscription,
} from '../../../shared/event-store/EventStore.ts';
import { assertDistinctStreams } from '../assertDistinctStreams.ts';
import type { DomainEvent, EventToAppend } from '../../../shared/events.ts';
import { checkExpectedRevision } from '../checkExpectedRevision.ts';
import { readAllBounds, readStreamBounds } from '../readBounds.ts';
import { SubscriptionHub } from '../SubscriptionHub.ts';

/**
 * The event store of unit tests: the whole log in arrays. Data crosses its edge as a copy,
 * going in through JSON exactly as the SQLite and EventStoreDB adapters serialize it, so a test
 * cannot pass here with data (a Date, undefined) that a durable store would change.
 */
export class MemoryEventStore implements EventStore {
  private readonly log: RecordedEvent[] = [];
  private readonly streams = new Map<string, RecordedEvent[]>();
  private readonly hub = new SubscriptionHub(this);
  private closed = false;

  constructor(private readonly clock: Clock = systemClock) {}

  async append<E extends DomainEvent>(
    streamId: string,
    events: ReadonlyArray<EventToAppend<E>>,
    expectedRevision: ExpectedRevision,
  ): Promise<AppendResult> {
    const [result] = await this.appendAtomically([{ streamId, events, expected: expectedRevision }]);
    if (!result) throw new Error('MemoryEventStore: no result for the append');
    return result;
  }

  async appendAtomically(appends: ReadonlyArray<StreamAppend>): Promise<AppendResult[]> {
    this.assertOpen();
    assertDistinctStreams(appends);
    const lasts = appends.map(({ streamId, expected }) => {
      const length = this.streams.get(streamId)?.length ?? 0;
      return checkExpectedRevision(streamId, expected, length === 0 ? 'no_stream' : length - 1);
    });
    const recordedAt = this.clock.now().toISOString();
    // Build every record before storing any, so an event that cannot be serialized fails the
    // whole append and leaves the log untouched.
    let position = this.log.length;
    const recorded = appends.map(({ streamId, events }, at) =>
      events.map(
        (event, index): RecordedEvent => ({
          id: randomUUID(),
          streamId,
          revision: (lasts[at] ?? -1) + 1 + index,
          position: BigInt(++position),
          type: event.type,
          data: jsonCopy(event.data),
          metadata: jsonCopy(event.metadata),
          recordedAt,
        }),
      ),
    );
    // No await from the checks to the writes: nothing may append in between.
    const head = BigInt(this.log.length);
    const results = recorded.map((records, at): AppendResult => {
      const newest = records.at(-1);
      return newest ? { nextExpectedRevision: newest.revision, position: newest.position } : { nextExpectedRevision: lasts[at] ?? -1, position: head };
    });
    for (const [at, records] of recorded.entries()) {
      if (records.length === 0) continue;
      const streamId = appends[at]?.streamId ?? '';
      this.log.push(...records);
      this.streams.set(streamId, [...(this.streams.get(streamId) ?? []), ...records]);
    }
    if (recorded.some((records) => records.length > 0)) this.hub.notifyAppended();
    return results;
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const { from, to } = readStreamBounds(options);
    if (to < from) return [];
    return (this.streams.get(streamId) ?? []).slice(from, to + 1).map((event) => structuredClone(event));
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const { after, maxCount } = readAllBounds(options);
    // Position n is the n-th event, so the page after position p starts at index p.
    const start = Number(after);
    return this.log.slice(start, start + maxCount).map((event) => structuredClone(event));
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    this.assertOpen();
    return this.hub.subscribe(options);
  }

  async headPosition(): Promise<Position> {
    return BigInt(this.log.length);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.hub.closeAll();
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('MemoryEventStore is closed');
  }
}

function jsonCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
