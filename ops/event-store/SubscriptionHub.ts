import type { SubscribeOptions, Subscription } from '../../shared/event-store/EventStore.ts';
import { AppendSignal } from './AppendSignal.ts';
import { pullSubscription, type PulledLog } from './pullSubscription.ts';

/** The subscriptions of one store: woken after each of its commits, all stopped when it closes. */
export class SubscriptionHub {
  private readonly signal = new AppendSignal();
  private readonly open = new Set<Subscription>();

  constructor(
    private readonly log: PulledLog,
    private readonly pollIntervalMs?: number,
  ) {}

  subscribe(options: SubscribeOptions): Subscription {
    const subscription = pullSubscription(this.log, { signal: this.signal, pollIntervalMs: this.pollIntervalMs }, options);
    const tracked: Subscription = {
      close: async () => {
        this.open.delete(tracked);
        await subscription.close();
      },
    };
    this.open.add(tracked);
    return tracked;
  }

  notifyAppended(): void {
    this.signal.notify();
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.open].map((subscription) => subscription.close()));
  }
}
