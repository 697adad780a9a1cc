import { describeEventStoreContract } from '../eventStoreContract.ts';
import { MemoryEventStore } from './MemoryEventStore.ts';

describeEventStoreContract('MemoryEventStore', () => new MemoryEventStore());
