import type { MessageBus } from '../../shared/bus/MessageBus.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import type { CodeRunner, RunLimits } from '../../shared/ports/CodeRunner.ts';
import type { TokenSigner } from '../../shared/ports/TokenSigner.ts';
import type { CatalogDeps } from '../catalog/catalogDeps.ts';
import type { QueueHandler } from '../queue/handler.ts';
import type { RunTracing } from '../../shared/ports/RunTracing.ts';

/** Ports of the task engine: the catalog's plus the bus, token signing for workers and the queues. */
export interface TaskDeps extends CatalogDeps {
  bus: MessageBus;
  tokens: TokenSigner;
  queue: QueueHandler;
  logger: Logger;
  /** Runs task hooks (actions) as well as operators. */
  runner: CodeRunner;
  limits: RunLimits;
  /** Traces of the runs (ops/tracing); absent when tracing is off. */
  tracing?: RunTracing;
}

export const EXECUTE_TASK = 'execute_task';
