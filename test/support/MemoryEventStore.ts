import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../../shared/clock.ts';
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
} from '../../shared/event-store/EventStore.ts';
import { assertDistinctStreams } from '../../ops/event-store/assertDistinctStreams.ts';
import type { DomainEvent, EventToAppend } from '../../shared/events.ts';
import { checkExpectedRevision } from '../../ops/event-store/checkExpectedRevision.ts';
import { stampSchemaVersion, upcast } from '../../shared/event-store/upcast.ts';
import { readAllBounds, readStreamBounds } from '../../ops/event-store/readBounds.ts';
import { SubscriptionHub } from '../../ops/event-store/SubscriptionHub.ts';

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
    const recordedAt = this.clock.now().toISOString();
    // Every expectation is checked, and every record built (an event that cannot be serialized fails
    // the whole call), before anything is stored; no await in between, so nothing appends meanwhile.
    let position = this.log.length;
    const head = BigInt(position);
    const writes = appends.map(({ streamId, expected, events }) => {
      const stream = this.streams.get(streamId) ?? [];
      const last = checkExpectedRevision(streamId, expected, stream.length === 0 ? 'no_stream' : stream.length - 1);
      const records = events.map(
        (event, index): RecordedEvent => ({
          id: randomUUID(),
          streamId,
          revision: last + 1 + index,
          position: BigInt(++position),
          type: event.type,
          data: jsonCopy(event.data),
          metadata: stampSchemaVersion(event.type, jsonCopy(event.metadata)),
          recordedAt,
        }),
      );
      return { streamId, stream, last, records };
    });
    for (const { streamId, stream, records } of writes) {
      if (records.length === 0) continue;
      this.log.push(...records);
      this.streams.set(streamId, [...stream, ...records]);
    }
    if (writes.some(({ records }) => records.length > 0)) this.hub.notifyAppended();
    return writes.map(({ last, records }): AppendResult => {
      const newest = records.at(-1);
      return newest ? { nextExpectedRevision: newest.revision, position: newest.position } : { nextExpectedRevision: last, position: head };
    });
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const { from, to } = readStreamBounds(options);
    if (to < from) return [];
    return (this.streams.get(streamId) ?? []).slice(from, to + 1).map((event) => upcast(structuredClone(event)));
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const { after, maxCount } = readAllBounds(options);
    // Position n is the n-th event, so the page after position p starts at index p.
    const start = Number(after);
    return this.log.slice(start, start + maxCount).map((event) => upcast(structuredClone(event)));
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
