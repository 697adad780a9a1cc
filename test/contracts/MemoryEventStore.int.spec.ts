import { describeEventStoreContract } from './eventStoreContract.ts';
import { MemoryEventStore } from '../support/MemoryEventStore.ts';

describeEventStoreContract('MemoryEventStore', () => new MemoryEventStore());
