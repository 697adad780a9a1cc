import type { EventHeader, EventStore, Position, ReadAllOptions, RecordedEvent, SubscribeOptions, Subscription } from '../../shared/event-store/EventStore.ts';
import type { AppendSignal } from './AppendSignal.ts';
import { DEFAULT_READ_ALL_PAGE } from './readBounds.ts';
import { subscriptionRun, type Delivery } from './subscriptionRun.ts';

/**
 * The part of a store a subscription reads from. `readAccepted`, where a store has it, reads a page
 * decoding only the events `accepts` takes (`through`: the position of the page's last event,
 * accepted or not; null for an empty page).
 */
export type PulledLog = Pick<EventStore, 'readAll' | 'headPosition'> & {
  readAccepted?(options: ReadAllOptions, accepts: (event: EventHeader) => boolean): Promise<{ events: RecordedEvent[]; through: Position | null }>;
};

export interface PullSettings {
  /** Notified by the store after each commit that wrote events. */
  signal: AppendSignal;
  /**
   * Re-read this often even without a signal: another process (the CLI) may append to the same
   * SQLite file, and only polling notices it. Undefined for stores no one else can write to.
   */
  pollIntervalMs?: number;
  pageSize?: number;
}

/**
 * The one subscription loop of every adapter that can read its log by position. Pulling pages
 * after the last delivered position, rather than pushing appended events, is what makes the
 * catch-up/live hand-over gapless and repeat-free: there is only one cursor and one read path.
 * What every subscription promises besides (one event at a time, caught up once, stop on error,
 * close) is subscriptionRun's.
 *
 * Do not await `close()` from inside `onEvent`: close waits for the in-flight handler.
 */
export function pullSubscription(log: PulledLog, settings: PullSettings, options: SubscribeOptions): Subscription {
  const { signal, pollIntervalMs, pageSize = DEFAULT_READ_ALL_PAGE } = settings;
  let wake = (): void => {};

  const waitForAppend = (delivery: Delivery, seenVersion: number): Promise<void> =>
    new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      let detach = (): void => {};
      const done = (): void => {
        clearTimeout(timer);
        detach();
        wake = () => {};
        resolve();
      };
      if (delivery.closed || signal.version !== seenVersion) return done();
      wake = done;
      detach = signal.listen(done);
      if (pollIntervalMs !== undefined) timer = setTimeout(done, pollIntervalMs);
    });

  const { accepts } = options;
  const readPage = async (after: Position): Promise<{ events: RecordedEvent[]; through: Position | null }> => {
    if (accepts && log.readAccepted) return log.readAccepted({ after, maxCount: pageSize }, accepts);
    const events = await log.readAll({ after, maxCount: pageSize });
    return { events, through: events.at(-1)?.position ?? null };
  };

  const pull = async (delivery: Delivery): Promise<void> => {
    while (!delivery.closed) {
      const seenVersion = signal.version;
      const page = await readPage(delivery.last);
      if (page.through === null) {
        delivery.reachedHead();
        await waitForAppend(delivery, seenVersion);
        continue;
      }
      for (const event of page.events) {
        if (delivery.closed) return;
        await delivery.deliver(event);
      }
      if (!delivery.closed) delivery.passed(page.through);
    }
  };

  return subscriptionRun(options, () => log.headPosition(), pull, () => wake());
}
