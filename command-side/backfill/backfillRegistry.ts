import type { EventStore } from '../../shared/event-store/EventStore.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import { BACKFILL_REGISTRY_STREAM, type BackfillRegistryEvent } from '../../shared/task/backfill/backfillEvents.ts';

/**
 * The `backfills` stream read incrementally: backfill id -> task. Registered before the request is
 * decided, so a backfill in a task's stream is always found here (a refused request leaves an entry
 * that names no backfill: readers find nothing under it). Append-only with no decision: `any`.
 */
export interface BackfillRegistry {
  register(backfillId: Laui, taskLaui: Laui, metadata: EventMetadata): Promise<void>;
  taskOf(backfillId: Laui): Promise<Laui | null>;
  /** Every registered backfill, oldest first, with when it was registered. */
  all(): Promise<Array<{ backfillId: Laui; taskLaui: Laui; at: string }>>;
}

export const backfillRegistry = (eventStore: EventStore): BackfillRegistry => {
  const tasks = new Map<Laui, { taskLaui: Laui; at: string }>();
  let revision = -1;
  let reading: Promise<void> | null = null;
  const catchUp = (): Promise<void> => {
    reading ??= (async () => {
      try {
        for (const event of await eventStore.readStream(BACKFILL_REGISTRY_STREAM, { fromRevision: revision + 1 })) {
          const data = event.data as BackfillRegistryEvent['data'];
          tasks.set(data.backfill_id, { taskLaui: data.task_laui, at: data.at });
          revision = event.revision;
        }
      } finally {
        reading = null;
      }
    })();
    return reading;
  };
  return {
    async register(backfillId, taskLaui, metadata) {
      const event: BackfillRegistryEvent = { type: 'BackfillRegistered', data: { backfill_id: backfillId, task_laui: taskLaui, at: metadata.at } };
      await eventStore.append(BACKFILL_REGISTRY_STREAM, [{ ...event, metadata }], 'any');
    },
    async taskOf(backfillId) {
      // Twice: a read already under way when asked may have started before the entry was written.
      for (let attempt = 0; attempt < 2 && !tasks.has(backfillId); attempt += 1) await catchUp();
      return tasks.get(backfillId)?.taskLaui ?? null;
    },
    async all() {
      await catchUp();
      return [...tasks].map(([backfillId, entry]) => ({ backfillId, ...entry }));
    },
  };
};
