import type { Config, Role } from './config.ts';

/**
 * What one process runs, by role (DESIGN §1). `all` is the embedded mode's one process. In the
 * distributed mode each role is started on its own (`npm start -- --role worker`) and they meet
 * through the shared event store, read store and bus:
 * - api: every REST route (commands append, reads wait for the read models), no background work;
 * - projector: builds the read models (a MongoDB read store shared by the others) and publishes the
 *   log to the `domain-events` topic;
 * - worker: consumes `execute_task` and runs operator code;
 * - scheduler: the cron loops of the projects the bus assigns it, and the lease reaper.
 * Every role answers GET /healthz with its role; only api (and all) serve the REST routes.
 */
export interface RoleParts {
  role: Role;
  api: boolean;
  worker: boolean;
  scheduler: boolean;
  /** Publishes the log to Kafka's `domain-events` (Kafka mode only). */
  publisher: boolean;
  /**
   * Applies the projections to the read store. A memory read store is this process's own, so every
   * role projects into it; a shared (MongoDB) one is written by the projector role (and `all`) and
   * only read by the others, which follow the projector's checkpoint for read-your-writes.
   */
  projects: boolean;
}

export const roleParts = (config: Pick<Config, 'role' | 'readStore'>): RoleParts => {
  const { role } = config;
  const all = role === 'all';
  return {
    role,
    api: all || role === 'api',
    worker: all || role === 'worker',
    scheduler: all || role === 'scheduler',
    publisher: all || role === 'projector',
    projects: all || role === 'projector' || config.readStore.kind === 'memory',
  };
};
