import type { EventStore, SubscribeOptions, Subscription } from '../../shared/event-store/EventStore.ts';
import type { AppendSignal } from './AppendSignal.ts';
import { DEFAULT_READ_ALL_PAGE } from './readBounds.ts';

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
 *
 * Do not await `close()` from inside `onEvent`: close waits for the in-flight handler.
 */
export function pullSubscription(log: PulledLog, settings: PullSettings, options: SubscribeOptions): Subscription {
  const { signal, pollIntervalMs, pageSize = DEFAULT_READ_ALL_PAGE } = settings;
  let closed = false;
  let wake = (): void => {};

  const waitForAppend = (seenVersion: number): Promise<void> =>
    new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      let detach = (): void => {};
      const done = (): void => {
        clearTimeout(timer);
        detach();
        wake = () => {};
        resolve();
      };
      if (closed || signal.version !== seenVersion) return done();
      wake = done;
      detach = signal.listen(done);
      if (pollIntervalMs !== undefined) timer = setTimeout(done, pollIntervalMs);
    });

  const run = async (): Promise<void> => {
    let last = options.after;
    let caughtUp = false;
    const reachedHead = (): void => {
      if (caughtUp) return;
      caughtUp = true;
      options.onCaughtUp?.(last);
    };
    try {
      // The head seen at subscription time: under steady appends an empty page may never come,
      // yet the caller still needs to learn when history has been replayed.
      const head = await log.headPosition();
      while (!closed) {
        const seenVersion = signal.version;
        const page = await log.readAll({ after: last, maxCount: pageSize });
        if (page.length === 0) {
          reachedHead();
          await waitForAppend(seenVersion);
          continue;
        }
        for (const event of page) {
          if (closed) return;
          await options.onEvent(event);
          last = event.position;
          if (last >= head) reachedHead();
        }
      }
    } catch (error) {
      // Stopping is the only safe reaction: skipping the event would leave a read model wrong.
      closed = true;
      if (!options.onError) throw error;
      options.onError(error);
    }
  };

  const running = run();
  return {
    close: async () => {
      closed = true;
      wake();
      // A failure without onError has already surfaced as an unhandled rejection; closing
      // a stopped subscription must still succeed.
      await running.catch(() => {});
    },
  };
}
