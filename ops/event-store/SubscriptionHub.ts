import type { SubscribeOptions, Subscription } from '../../shared/event-store/EventStore.ts';
import { AppendSignal } from './AppendSignal.ts';
import { OpenSubscriptions } from './OpenSubscriptions.ts';
import { pullSubscription, type PulledLog } from './pullSubscription.ts';

/** The subscriptions of one store: woken after each of its commits, all stopped when it closes. */
export class SubscriptionHub {
  private readonly signal = new AppendSignal();
  private readonly open = new OpenSubscriptions();

  constructor(
    private readonly log: PulledLog,
    private readonly pollIntervalMs?: number,
  ) {}

  subscribe(options: SubscribeOptions): Subscription {
    return this.open.track(pullSubscription(this.log, { signal: this.signal, pollIntervalMs: this.pollIntervalMs }, options));
  }

  notifyAppended(): void {
    this.signal.notify();
  }

  closeAll(): Promise<void> {
    return this.open.closeAll();
  }
}
