import { MemoryEventStore } from '../../test/support/MemoryEventStore.ts';
import { MemoryReadStore } from '../read-store/MemoryReadStore.ts';
import { describeProjectionRunnerContract } from '../../test/contracts/projectionRunnerContract.ts';

describeProjectionRunnerContract('memory read store (one write per document)', {
  events: () => new MemoryEventStore(),
  open: async () => new MemoryReadStore(),
  attach: async (store) => store,
});

describeProjectionRunnerContract('memory read store with sequential batches (the path of a standalone MongoDB)', {
  events: () => new MemoryEventStore(),
  open: async () => new MemoryReadStore({ batches: true }),
  attach: async (store) => store,
});
