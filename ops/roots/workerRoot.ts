import { executeTask } from '../../command-side/task/executeTask.ts';
import { EXECUTE_TASK } from '../../command-side/task/taskDeps.ts';
import type { ExecuteTaskMessage } from '../../command-side/task/dispatchConnection.ts';

import type { Kernel } from './openKernel.ts';
import type { RolePart } from './RolePart.ts';

/** The worker role: consumes `execute_task` and runs operator code in its slots (WORKER_CONCURRENCY). */
export const workerRoot = (k: Kernel): RolePart => {
  let worker: { close(): Promise<void> } | null = null;
  return {
    // Once the read models are current: a run reads its task's state.
    start: async () => {
      worker = await k.bus.subscribe<ExecuteTaskMessage>({ topic: EXECUTE_TASK, group: 'workers', handler: executeTask(k.workerDeps) });
    },
    // Runs waiting for a slot are given back at once (not acknowledged: Kafka hands them to another
    // worker; in the embedded mode the next start's reaper finds their messages gone).
    stopTaking: () => k.slots.close(),
    pending: () => [{ name: 'the worker (runs delivered to it, and recording their ends)', done: worker?.close() ?? Promise.resolve() }],
  };
};
