import type { Position } from '../../shared/event-store/EventStore.ts';
import { ProjectionRunner } from '../../projections/runner/ProjectionRunner.ts';
import { MemoryReadStore } from '../../projections/read-store/MemoryReadStore.ts';
import { ReadModelSnapshots } from '../snapshots/ReadModelSnapshots.ts';
import { snapshotFolder } from '../snapshots/snapshotFile.ts';

import type { Kernel } from './openKernel.ts';
import type { RolePart } from './RolePart.ts';

/**
 * The projector role: applies the log to the read store (every role does it for its own memory
 * read store; a shared MongoDB one is written by the projector alone) and, on Kafka, publishes the
 * log to `domain-events` for analysts' own consumers.
 */
export const projectorRoot = (k: Kernel, projections: ProjectionRunner): RolePart & { snapshots: ReadModelSnapshots | null } => {
  const { announce, config, eventStore, kafkaSecurity, logger, parts, readStore } = k;
  // A snapshot records the id of the event at its position; a start checks the log still has it there.
  const eventIdAt = async (position: Position): Promise<string | null> => {
    const [event] = await eventStore.readAll({ after: position - 1n, maxCount: 1 });
    return event?.position === position ? event.id : null;
  };
  // The embedded read models start from their newest snapshot (DATA_DIR/snapshots) and replay only
  // the log after it; snapshots are then taken in the background (ops/snapshots).
  const snapshots =
    readStore instanceof MemoryReadStore && config.snapshotIntervalEvents > 0 && !config.rebuildReadModels
      ? new ReadModelSnapshots({ dir: snapshotFolder(config.dataDir), runner: 'embedded', store: readStore, projections, head: () => eventStore.headPosition(), eventIdAt, intervalEvents: config.snapshotIntervalEvents, logger, announce })
      : null;
  let publisher: { close(): Promise<void> } | null = null;
  return {
    snapshots,
    start: async () => {
      await snapshots?.load();
      await projections.start();
      snapshots?.start();
    },
    // After the other roles started: the log's publication and a requested rebuild.
    startLate: async () => {
      // Kafka mode only: the log is also published to `domain-events` for analysts' own consumers.
      // Imported only on Kafka: the publisher loads kafkajs, which an embedded start does not need.
      publisher =
        parts.publisher && config.bus.kind === 'kafka'
          ? await (await import('../bus/kafka/DomainEventPublisher.ts')).startDomainEventPublishing(config.bus, { eventStore, dataDir: config.dataDir, ...(kafkaSecurity ? { security: kafkaSecurity } : {}), logger }) : null;
      if (config.rebuildReadModels) {
        // In the background: the live models keep serving until the rebuilt ones are swapped in.
        announce('Rebuilding the read models into fresh collections (READ_MODELS_REBUILD)');
        projections.rebuild().then(
          () => logger.log({ level: 'info', category: 'API', message: 'Read models rebuilt and swapped in' }),
          (error: unknown) => logger.log({ level: 'error', category: 'API', message: `Read-model rebuild failed (the live models stay): ${String(error)}` }),
        );
      }
    },
    close: async () => {
      await publisher?.close();
    },
    // Last: the read models as the stop left them, so the next start replays (almost) nothing.
    closeLast: async () => {
      await snapshots?.stop();
      await projections.stop();
    },
  };
};
