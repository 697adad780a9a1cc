import { expect } from 'chai';
import { START, type Position, type RecordedEvent, type SubscribeOptions, type Subscription } from '../../../shared/event-store/EventStore.ts';
import { anEvent, delay, waitUntil } from '../../../test/contracts/eventStore/contractFixtures.ts';
import { catchUpSubscription, type CatchUpSource, type ResubscribeSettings, type ServerSubscription } from './catchUpSubscription.ts';

/** What the fake server's connection fails with; anything else is not retryable. */
class ConnectionLost extends Error {}

const FAST: ResubscribeSettings = { attempts: 3, baseMs: 1, maxMs: 200 };

const recorded = (n: number, position: Position): RecordedEvent => ({
  ...anEvent(n),
  id: `id-${n}`,
  streamId: 's',
  revision: n,
  position,
  recordedAt: '2024-05-01T10:00:00.000Z',
});

/**
 * A log and the server subscriptions to it, as the store's would behave: history after the
 * position, then live events. A planned failure ends the next subscription after it has delivered
 * `after` events.
 */
class FakeServer {
  readonly log: RecordedEvent[] = [];
  /** The position each subscription was opened after. */
  readonly openedAfter: Position[] = [];
  closed = 0;
  /** Items sent ahead of the log's events by the next subscription (repeats, results not ours). */
  prelude: Array<RecordedEvent | null> = [];
  private readonly failures: Array<{ after: number; error: unknown }> = [];
  private readonly waiting = new Set<() => void>();

  append(count: number): void {
    for (let index = 0; index < count; index += 1) {
      const n = this.log.length;
      this.log.push(recorded(n, BigInt((n + 1) * 10)));
    }
    for (const wake of [...this.waiting]) wake();
  }

  failNext(after: number, error: unknown): void {
    this.failures.push({ after, error });
  }

  source(): CatchUpSource {
    return {
      head: async () => this.log.at(-1)?.position ?? START,
      open: (after) => this.open(after),
      retryable: (error) => error instanceof ConnectionLost,
    };
  }

  private open(after: Position): ServerSubscription {
    this.openedAfter.push(after);
    const failure = this.failures.shift();
    const prelude = this.prelude.splice(0);
    let ended = false;
    let wake = (): void => {};
    const next = (): Promise<void> =>
      new Promise<void>((resolve) => {
        wake = () => {
          this.waiting.delete(wake);
          resolve();
        };
        this.waiting.add(wake);
      });
    const { log } = this;
    async function* events(): AsyncGenerator<RecordedEvent | null> {
      yield* prelude;
      let cursor = after;
      let sent = 0;
      while (!ended) {
        const event = log.find((candidate) => candidate.position > cursor);
        if (failure && sent === failure.after) throw failure.error;
        if (!event) {
          await next();
          continue;
        }
        cursor = event.position;
        sent += 1;
        yield event;
      }
    }
    return {
      [Symbol.asyncIterator]: () => events(),
      close: async () => {
        if (!ended) this.closed += 1;
        ended = true;
        wake();
      },
    };
  }
}

describe('catchUpSubscription (the KurrentDB store\'s subscribeToAll)', () => {
  let server: FakeServer;
  const open: Subscription[] = [];
  const subscribe = (options: Partial<SubscribeOptions> & Pick<SubscribeOptions, 'onEvent'>): Subscription => {
    const subscription = catchUpSubscription(server.source(), { after: START, ...options }, FAST);
    open.push(subscription);
    return subscription;
  };
  const numbers = (events: RecordedEvent[]): unknown[] => events.map((event) => event.data.n);

  beforeEach(() => {
    server = new FakeServer();
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((subscription) => subscription.close()));
  });

  it('given 3 events, when subscribing from START, then they arrive in order, then caught up at the third position, then live events follow', async () => {
    server.append(3);
    const seen: unknown[] = [];
    subscribe({ onEvent: (event) => void seen.push(event.data.n), onCaughtUp: (position) => seen.push(position) });
    await waitUntil(() => seen.length === 4, 'history and caught-up are seen');
    server.append(1);
    await waitUntil(() => seen.length === 5, 'the live event is seen');
    expect(seen).to.deep.equal([0, 1, 2, 30n, 3]);
  });

  it('given an empty log, when subscribing, then caught up at START at once', async () => {
    const caughtUp: Position[] = [];
    subscribe({ onEvent: () => undefined, onCaughtUp: (position) => caughtUp.push(position) });
    await waitUntil(() => caughtUp.length === 1, 'caught up');
    expect(caughtUp).to.deep.equal([START]);
  });

  it('given results that are not ours and a repeat of a delivered position, when they come, then they are skipped', async () => {
    server.append(2);
    server.prelude = [null, recorded(99, START)];
    const received: RecordedEvent[] = [];
    subscribe({ onEvent: (event) => void received.push(event) });
    await waitUntil(() => received.length === 2, '2 events are received');
    await delay(20);
    expect(numbers(received)).to.deep.equal([0, 1]);
  });

  it('given a connection lost after 2 events, when subscribed, then it subscribes again after the second and every event arrives once', async () => {
    server.append(5);
    server.failNext(2, new ConnectionLost('UNAVAILABLE'));
    const received: RecordedEvent[] = [];
    const errors: unknown[] = [];
    subscribe({ onEvent: (event) => void received.push(event), onError: (error) => errors.push(error) });
    await waitUntil(() => received.length === 5, '5 events are received');
    expect(numbers(received)).to.deep.equal([0, 1, 2, 3, 4]);
    expect(server.openedAfter).to.deep.equal([START, 20n]);
    expect(errors).to.deep.equal([]);
  });

  it('given a subscription the server ends without an error, when it ends, then it is opened again after the last delivered event', async () => {
    server.append(2);
    const source = server.source();
    let opened = 0;
    const ending: CatchUpSource = {
      ...source,
      open: (after) => {
        const subscription = source.open(after);
        opened += 1;
        if (opened > 1) return subscription;
        // The first one ends after one event, as a server ending the call would.
        return {
          close: subscription.close,
          async *[Symbol.asyncIterator]() {
            for await (const event of subscription) {
              yield event;
              return;
            }
          },
        };
      },
    };
    const received: RecordedEvent[] = [];
    open.push(catchUpSubscription(ending, { after: START, onEvent: (event) => void received.push(event) }, FAST));
    await waitUntil(() => received.length === 2, 'both events are received');
    expect(server.openedAfter).to.deep.equal([START, 10n]);
    expect(numbers(received)).to.deep.equal([0, 1]);
  });

  it('given the connection lost on every attempt, when the attempts are spent, then onError gets the last error and the subscription stops', async () => {
    server.append(1);
    const lost = new ConnectionLost('UNAVAILABLE');
    for (let attempt = 0; attempt <= FAST.attempts; attempt += 1) server.failNext(0, lost);
    const errors: unknown[] = [];
    subscribe({ onEvent: () => undefined, onError: (error) => errors.push(error) });
    await waitUntil(() => errors.length === 1, 'the error is reported');
    expect(errors).to.deep.equal([lost]);
    expect(server.openedAfter).to.have.length(FAST.attempts + 1);
  });

  it('given an error that is not the connection\'s (an event that cannot be decoded), when it comes, then onError gets it at once, without subscribing again', async () => {
    server.append(3);
    const undecodable = new Error('not an event of this service');
    server.failNext(1, undecodable);
    const errors: unknown[] = [];
    subscribe({ onEvent: () => undefined, onError: (error) => errors.push(error) });
    await waitUntil(() => errors.length === 1, 'the error is reported');
    await delay(20);
    expect(errors).to.deep.equal([undecodable]);
    expect(server.openedAfter).to.deep.equal([START]);
  });

  it('given a handler that throws on the second event, when events flow, then onError gets that error, nothing more is delivered and the server subscription is closed', async () => {
    server.append(4);
    const failure = new ConnectionLost('thrown by the handler, not the server');
    const delivered: unknown[] = [];
    const errors: unknown[] = [];
    subscribe({
      onEvent: (event) => {
        delivered.push(event.data.n);
        if (event.data.n === 1) throw failure;
      },
      onError: (error) => errors.push(error),
    });
    await waitUntil(() => errors.length === 1, 'the error is reported');
    server.append(1);
    await delay(20);
    expect(errors).to.deep.equal([failure]);
    expect(delivered).to.deep.equal([0, 1]);
    expect([server.openedAfter.length, server.closed]).to.deep.equal([1, 1]);
  });

  it('given a subscription waiting to subscribe again, when closing, then close does not wait out the backoff', async () => {
    server.append(1);
    server.failNext(0, new ConnectionLost('UNAVAILABLE'));
    // A backoff of 10 minutes: a close that waited it out would fail the test on its timeout.
    const subscription = catchUpSubscription(server.source(), { after: START, onEvent: () => undefined }, { attempts: 3, baseMs: 600_000, maxMs: 600_000 });
    await waitUntil(() => server.closed === 1, 'the failed subscription is closed');
    await subscription.close();
    expect(server.openedAfter).to.deep.equal([START]);
  });
});
