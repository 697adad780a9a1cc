import type { RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { Projection } from '../runner/Projection.ts';
import { ITEMS } from './itemsProjection.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';

/**
 * Queue metrics of spec 2.6 on the connection's own item document, where a client reads them with
 * GET /catalog/get?item_laui=<connection>: current_parallelism, in_queue, and the task LAUIs
 * running and waiting (max_parallelism and sort_dict are the connection's fields).
 */
const without = (list: unknown, value: string): string[] => (Array.isArray(list) ? (list as string[]).filter((entry) => entry !== value) : []);

export const queueMetricsProjection: Projection<ItemDoc> = {
  name: 'queue-metrics',
  collection: ITEMS,
  indexes: [],
  handles: new Set(['TaskEnqueued', 'TaskLeased', 'TaskSlotReleased', 'TaskDequeued']),
  documentId: (event: RecordedEvent) => (event.streamId.startsWith('queue-') ? event.streamId.slice('queue-'.length) : null),
  evolve: (doc, event) => {
    if (!doc) return null;
    const task = String((event.data as { task_laui: unknown }).task_laui);
    let running = without(doc.queue_running, task);
    let waiting = without(doc.queue_waiting, task);
    if (event.type === 'TaskEnqueued') waiting = [...waiting, task];
    if (event.type === 'TaskLeased') running = [...running, task];
    // queue_active (indexed) lets the lease reaper find busy connections without a scan.
    return {
      ...doc,
      queue_running: running,
      queue_waiting: waiting,
      current_parallelism: running.length,
      in_queue: waiting.length,
      queue_active: running.length + waiting.length > 0,
    };
  },
};
