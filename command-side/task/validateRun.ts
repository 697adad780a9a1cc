import { referencedItems, validateTask, type ReferencedItem, type TaskValidation } from '../../shared/task/validateTask.ts';
import type { RunReads } from './runReads.ts';

/** The validation verdict of a task against the batch's reads (spec 4.2 rules 2-5). */
export const validateRun = async (reads: RunReads, task: Record<string, unknown>): Promise<TaskValidation> => {
  const settings = await reads.settings();
  const lookup = new Map<string, ReferencedItem>();
  for (const { laui } of referencedItems(task)) {
    const item = await reads.item(laui);
    lookup.set(laui, item ? { item_type: item.item_type, deleted: item.is_deleted } : null);
  }
  return validateTask(task, {
    enforce_connection_operator_mapping: settings.enforce_connection_operator_mapping,
    connection_operator_mapping: settings.connection_operator_mapping,
    items: lookup,
  });
};
