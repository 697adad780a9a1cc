import { conflict } from '../../shared/errors.ts';
import { INITIAL_STATE, manualRunRefusal } from '../../shared/task/transitions.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';

/**
 * POST /task/run and /task/multiple_tasks obey the task state table before anything runs (no
 * pre-action, no queue entry): a task whose state a manual run may not leave (cancelled) is a 409
 * naming the transition. The item decider checks the same table again on the state the queued step
 * is decided on, for a state changed meanwhile.
 */
export const assertManualRun = (tasks: ReadonlyArray<ItemDoc>): void => {
  for (const task of tasks) {
    const refusal = manualRunRefusal(String(task.state ?? INITIAL_STATE));
    if (refusal !== null) throw conflict(`Task ${task.laui}: ${refusal}`);
  }
};
