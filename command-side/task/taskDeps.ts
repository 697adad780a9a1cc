import type { MessageBus } from '../../shared/bus/MessageBus.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import type { CodeRunner, RunLimits } from '../../shared/ports/CodeRunner.ts';
import type { TokenSigner } from '../../shared/ports/TokenSigner.ts';
import type { SystemSettings } from '../../shared/task/systemSettings.ts';
import { resolveSystemSettings } from '../../shared/task/systemSettings.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { CatalogDeps } from '../catalog/catalogDeps.ts';
import type { QueueHandler } from '../queue/handler.ts';

/** Ports of the task engine: the catalog's plus the bus, token signing for workers and the queues. */
export interface TaskDeps extends CatalogDeps {
  bus: MessageBus;
  tokens: TokenSigner;
  queue: QueueHandler;
  logger: Logger;
  /** Runs task hooks (actions) as well as operators. */
  runner: CodeRunner;
  limits: RunLimits;
}

export const EXECUTE_TASK = 'execute_task';

/** System settings are config items with config_type `system` (docs/decisions.md). */
export const loadSystemSettings = async (items: Collection<ItemDoc>): Promise<SystemSettings> => {
  const configs = await items.find({ where: { item_type: 'config', config_type: 'system', is_deleted: false } });
  return resolveSystemSettings(configs.map((doc) => ({ name: doc.name, content: (doc.content as Record<string, unknown>) ?? {}, config_type: 'system' })))
    .settings;
};
