import type { EventStore, SubscribeOptions, Subscription } from '../../shared/event-store/EventStore.ts';
import type { AppendSignal } from './AppendSignal.ts';
import { DEFAULT_READ_ALL_PAGE } from './readBounds.ts';
import { subscriptionRun, type Delivery } from './subscriptionRun.ts';

/** The part of a store a subscription reads from. */
export type PulledLog = Pick<EventStore, 'readAll' | 'headPosition'>;

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

  const pull = async (delivery: Delivery): Promise<void> => {
    while (!delivery.closed) {
      const seenVersion = signal.version;
      const page = await log.readAll({ after: delivery.last, maxCount: pageSize });
      if (page.length === 0) {
        delivery.reachedHead();
        await waitForAppend(delivery, seenVersion);
        continue;
      }
      for (const event of page) {
        if (delivery.closed) return;
        await delivery.deliver(event);
      }
    }
  };

  return subscriptionRun(options, () => log.headPosition(), pull, () => wake());
}
