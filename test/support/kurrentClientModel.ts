import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  ANY,
  BACKWARDS,
  END,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  UnavailableError,
  UnknownError,
  WrongExpectedVersionError,
  type AppendResult,
  type AppendToStreamOptions,
  type EventData,
  type Filter,
  type JSONRecordedEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type SubscribeToAllOptions,
} from '@kurrent/kurrentdb-client';
import type { KurrentClient } from '../../ops/event-store/kurrentdb/KurrentEventStore.ts';

interface Stored {
  streamId: string;
  id: string;
  revision: bigint;
  type: string;
  data: string;
  metadata: string;
  created: Date;
  position: bigint;
}

/**
 * A model of the KurrentDB client over an in-memory log, for the store's unit specs where no
 * server runs. It behaves as the adapter relies on the server behaving, so the contract suite can
 * check the adapter's own logic here; the e2e spec checks the same against a real node:
 * - positions are byte offsets: large, increasing, not consecutive (commit = prepare);
 * - every append is followed by a system link event in `$ce-<category>`, and the log starts with
 *   system events, so filtering is exercised;
 * - a read of $all starts AT its position (inclusive), a subscription AFTER it (exclusive); a read
 *   from a position that is no record's fails (an unknown error naming the position, as KurrentDB
 *   answers "Unexpected ReadAllResult.Error" for it);
 * - a filtered read counts maxCount among the events that pass the filter;
 * - a conflict is the client's WrongExpectedVersionError, a missing stream StreamNotFoundError on
 *   iteration;
 * - the answer to an append comes back on a later tick, and check-and-write is atomic.
 */
export class KurrentClientModel {
  private readonly log: Stored[] = [];
  private readonly streams = new Map<string, Stored[]>();
  private position = 1_000n;
  private waiting = new Set<() => void>();
  private readonly subscriptions = new Set<{ fail(error: Error): void }>();
  disposed = false;

  constructor() {
    this.write('$settings', '$settings', {}, {});
    this.write('$scavenges', '$scavengeStarted', {}, {});
  }

  /** The model as the store's client. Its methods take the client's generic parameters loosely. */
  asClient(): KurrentClient {
    return this as unknown as KurrentClient;
  }

  /** Ends every open subscription with the error a lost connection gives. */
  dropConnections(): void {
    for (const subscription of [...this.subscriptions]) subscription.fail(new UnavailableError());
  }

  async appendToStream(streamName: string, events: EventData | EventData[], options: AppendToStreamOptions = {}): Promise<AppendResult> {
    this.assertOpen();
    const list = Array.isArray(events) ? events : [events];
    if (list.length === 0) throw new Error('model: the store sent an empty append');
    // Serialized at once (the real client does it after awaits); answered on a later tick.
    const serialized = list.map((event) => ({ id: event.id, type: event.type, data: event.data, metadata: event.metadata }));
    await new Promise<void>((resolve) => setImmediate(resolve));
    const stream = this.streams.get(streamName) ?? [];
    const current = stream.length === 0 ? NO_STREAM : BigInt(stream.length - 1);
    const expected = options.streamState ?? ANY;
    const holds = expected === ANY || (expected === NO_STREAM ? current === NO_STREAM : expected === STREAM_EXISTS ? current !== NO_STREAM : current === expected);
    if (!holds) throw new WrongExpectedVersionError(undefined, { streamName, expected, current });
    let last: Stored | undefined;
    for (const event of serialized) {
      last = this.write(streamName, event.type, event.data, event.metadata, event.id);
      if (!streamName.startsWith('$')) this.write(`$ce-${streamName.split('-')[0]}`, '$>', `${last.revision}@${streamName}`, {});
    }
    for (const wake of [...this.waiting]) wake();
    if (!last) throw new Error('model: nothing written');
    return { success: true, nextExpectedRevision: last.revision, position: { commit: last.position, prepare: last.position } };
  }

  async *readStream(streamName: string, options: ReadStreamOptions = {}): AsyncIterableIterator<{ event: JSONRecordedEvent }> {
    this.assertOpen();
    const { direction, fromRevision = START, maxCount = Number.MAX_SAFE_INTEGER } = options;
    const stream = this.streams.get(streamName);
    if (!stream) throw new StreamNotFoundError(undefined, streamName);
    const from = fromRevision === START ? 0n : fromRevision === END ? BigInt(stream.length - 1) : fromRevision;
    const ordered = direction === BACKWARDS ? stream.filter((event) => event.revision <= from).reverse() : stream.filter((event) => event.revision >= from);
    for (const event of ordered.slice(0, Number(maxCount))) yield { event: recorded(event) };
  }

  async *readAll(options: ReadAllOptions = {}): AsyncIterableIterator<{ event: JSONRecordedEvent; commitPosition: bigint }> {
    this.assertOpen();
    const { direction, fromPosition = START, maxCount = Number.MAX_SAFE_INTEGER, filter } = options;
    const backwards = direction === BACKWARDS;
    if (fromPosition !== START && fromPosition !== END && !this.log.some((event) => event.position === fromPosition.commit)) {
      throw new UnknownError(undefined, `Unexpected ReadAllResult.Error: invalid position C:${String(fromPosition.commit)}/P:${String(fromPosition.prepare)}`);
    }
    const inRange = (event: Stored): boolean => {
      if (fromPosition === START || fromPosition === END) return backwards ? fromPosition === END : fromPosition === START;
      return backwards ? event.position <= fromPosition.commit : event.position >= fromPosition.commit;
    };
    const ordered = (backwards ? [...this.log].reverse() : this.log).filter((event) => inRange(event) && passes(filter, event));
    for (const event of ordered.slice(0, Number(maxCount))) yield { event: recorded(event), commitPosition: event.position };
  }

  subscribeToAll(options: SubscribeToAllOptions = {}): Readable & { unsubscribe(): Promise<void> } {
    this.assertOpen();
    const { fromPosition = START, filter } = options;
    let stopped = false;
    let failure: Error | null = null;
    let wake = (): void => {};
    const pause = (): Promise<void> =>
      new Promise<void>((resolve) => {
        wake = () => {
          this.waiting.delete(wake);
          resolve();
        };
        this.waiting.add(wake);
      });
    const subscription = {
      fail: (error: Error) => {
        failure = error;
        wake();
      },
    };
    this.subscriptions.add(subscription);
    const { log, subscriptions } = this;
    async function* events(): AsyncGenerator<{ event: JSONRecordedEvent; commitPosition: bigint }> {
      let cursor = fromPosition === START ? -1n : fromPosition === END ? (log.at(-1)?.position ?? -1n) : fromPosition.commit;
      try {
        while (!stopped) {
          if (failure) throw failure;
          const next = log.find((event) => event.position > cursor && passes(filter, event));
          if (!next) {
            await pause();
            continue;
          }
          cursor = next.position;
          yield { event: recorded(next), commitPosition: next.position };
        }
      } finally {
        subscriptions.delete(subscription);
      }
    }
    return Object.assign(Readable.from(events(), { objectMode: true, highWaterMark: 4 }), {
      unsubscribe: async () => {
        stopped = true;
        wake();
      },
    });
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.dropConnections();
  }

  private write(streamId: string, type: string, data: unknown, metadata: unknown, id: string = randomUUID()): Stored {
    const stream = this.streams.get(streamId) ?? [];
    const dataJson = JSON.stringify(data);
    // A record's size moves the next position: positions are offsets in the log, not a counter.
    this.position += 120n + BigInt(dataJson.length);
    const stored: Stored = { streamId, id, revision: BigInt(stream.length), type, data: dataJson, metadata: JSON.stringify(metadata), created: new Date(), position: this.position };
    stream.push(stored);
    this.streams.set(streamId, stream);
    this.log.push(stored);
    return stored;
  }

  private assertOpen(): void {
    if (this.disposed) throw new UnavailableError();
  }
}

const passes = (filter: Filter | undefined, event: Stored): boolean => {
  if (!filter) return true;
  const subject = filter.filterOn === 'streamName' ? event.streamId : event.type;
  return 'prefixes' in filter ? filter.prefixes.some((prefix) => subject.startsWith(prefix)) : new RegExp(filter.regex).test(subject);
};

const recorded = (event: Stored): JSONRecordedEvent => ({
  streamId: event.streamId,
  id: event.id,
  isJson: true,
  revision: event.revision,
  type: event.type,
  created: event.created,
  data: JSON.parse(event.data) as JSONRecordedEvent['data'],
  metadata: JSON.parse(event.metadata) as JSONRecordedEvent['metadata'],
  position: { commit: event.position, prepare: event.position },
});
