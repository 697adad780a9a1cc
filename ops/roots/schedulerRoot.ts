import { reapStaleLeases } from '../../command-side/task/reapStaleLeases.ts';
import { EXECUTE_TASK } from '../../command-side/task/taskDeps.ts';
import { InProcessBus } from '../bus/InProcessBus.ts';
import { settledWithin } from '../shutdown/gracefulStop.ts';

import { SHUTDOWN_SETTLE_MS } from './openKernel.ts';
import type { Kernel } from './openKernel.ts';
import type { RolePart } from './RolePart.ts';

/**
 * The scheduler role: the cron loops of the projects the bus assigns this process (all of them in
 * process), the lease reaper, which ends the runs whose worker stopped beating, and the backfill
 * driver, which starts backfills' runs one step after another.
 */
export const schedulerRoot = (k: Kernel): RolePart => {
  const { clock, config, cron, backfill, inProcessBus, items, logger, workerDeps } = k;
  let reaping = Promise.resolve(0);
  let reaper: NodeJS.Timeout | undefined;
  return {
    // Once the read models are current: the reaper and the cron read task state.
    start: async () => {
      const reaperOptions = {
        // Only the in-process bus can say a run's message is gone; Kafka keeps it until a worker took it.
        busHolds: inProcessBus === null ? null : (laui: string) => (inProcessBus as InProcessBus).holds(EXECUTE_TASK, 'workers', laui),
        watchingSince: clock.now(),
      };
      reaper = setInterval(() => {
        reaping = reaping
          .then(async () => reapStaleLeases(workerDeps, (await items.find({ where: { queue_active: true } })).map((doc) => doc.laui), reaperOptions))
          .catch((error: unknown) => {
            logger.log({ level: 'error', category: 'CELERY', message: `Lease reaper failed: ${String(error)}` });
            return 0;
          });
      }, config.reaperIntervalMs);
      reaper.unref();
      cron.start();
      backfill.start();
    },
    stopTaking: () => clearInterval(reaper),
    pending: () => [
      { name: "the scheduler's current pass (pre-actions)", done: cron.stop() },
      { name: 'the lease reaper', done: reaping },
      { name: "the backfill driver's current pass", done: backfill.stop() },
    ],
    close: async () => {
      await settledWithin(reaping, SHUTDOWN_SETTLE_MS);
    },
  };
};
