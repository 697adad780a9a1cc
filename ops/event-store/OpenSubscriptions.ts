import type { Subscription } from '../../shared/event-store/EventStore.ts';

/** A store's open subscriptions, so that closing the store closes them (each waits for its handler). */
export class OpenSubscriptions {
  private readonly open = new Set<Subscription>();

  /** The subscription, forgotten here once closed. */
  track(subscription: Subscription): Subscription {
    const tracked: Subscription = {
      close: async () => {
        this.open.delete(tracked);
        await subscription.close();
      },
    };
    this.open.add(tracked);
    return tracked;
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.open].map((subscription) => subscription.close()));
  }
}
