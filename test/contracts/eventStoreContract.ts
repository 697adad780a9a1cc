import type { EventStore } from '../../shared/event-store/EventStore.ts';
import { describeAppendContract } from './eventStore/appendContract.ts';
import { describeAtomicAppendContract, describeWithoutAtomicAppends } from './eventStore/atomicAppendContract.ts';
import { describeConcurrencyContract } from './eventStore/concurrencyContract.ts';
import { describeReadContract } from './eventStore/readContract.ts';
import { describeSubscriptionContract } from './eventStore/subscriptionContract.ts';

/** Builds a fresh, empty store; the contract closes it after each test. */
export type EventStoreFactory = () => EventStore | Promise<EventStore>;

export interface EventStoreCapabilities {
  /**
   * Whether the store offers appendAtomically (multi-stream transactions); true unless said
   * otherwise. A store declared without it is checked to lack it, so neither a store that lost it
   * nor a declaration that lies passes: command-side/kernel/commit.ts decides its write path on it.
   */
  appendAtomically?: boolean;
}

/**
 * The behaviour every EventStore adapter owes its callers. Each adapter's spec runs it, so the
 * in-memory store of unit tests cannot drift from the durable ones.
 */
export function describeEventStoreContract(name: string, factory: EventStoreFactory, capabilities: EventStoreCapabilities = {}): void {
  describe(`${name} honours the EventStore contract`, () => {
    let current: EventStore | undefined;
    const store = (): EventStore => {
      if (!current) throw new Error('no store: the contract creates one before each test');
      return current;
    };

    beforeEach(async () => {
      current = await factory();
    });

    afterEach(async () => {
      await current?.close();
      current = undefined;
    });

    describeAppendContract(store);
    if (capabilities.appendAtomically ?? true) describeAtomicAppendContract(store);
    else describeWithoutAtomicAppends(store);
    describeReadContract(store);
    describeConcurrencyContract(store);
    describeSubscriptionContract(store);
  });
}
