import type { EventStore } from '../../shared/event-store/EventStore.ts';
import { describeAppendContract } from './contract/appendContract.ts';
import { describeAtomicAppendContract } from './contract/atomicAppendContract.ts';
import { describeConcurrencyContract } from './contract/concurrencyContract.ts';
import { describeReadContract } from './contract/readContract.ts';
import { describeSubscriptionContract } from './contract/subscriptionContract.ts';

/** Builds a fresh, empty store; the contract closes it after each test. */
export type EventStoreFactory = () => EventStore | Promise<EventStore>;

/**
 * The behaviour every EventStore adapter owes its callers. Each adapter's spec runs it, so the
 * in-memory store of unit tests cannot drift from the durable ones.
 */
export function describeEventStoreContract(name: string, factory: EventStoreFactory): void {
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
    describeAtomicAppendContract(store);
    describeReadContract(store);
    describeConcurrencyContract(store);
    describeSubscriptionContract(store);
  });
}
