import { mergeTaskConfig, type ConfigMergeResult } from './mergeConfig.ts';
import type { Collection } from '../read-store/ReadStore.ts';
import type { ItemDoc } from '../read-models/ItemDoc.ts';

/**
 * Rule 6 with the task's configs looked up: workflow child configs < attached configs < inline.
 * The config items are read as stored (peekFind, peek: no copy, a run merges them up to three
 * times), so the result shares their values: its callers only read it (templating copies what it
 * renders, a run's context is sent as JSON).
 */
export const mergedConfigOf = async (items: Collection<ItemDoc>, task: ItemDoc): Promise<ConfigMergeResult> => {
  const workflowConfigs =
    task.parent_laui === null
      ? []
      : (await items.peekFind({ where: { parent_laui: task.parent_laui, item_type: 'config', is_deleted: false }, sort: { field: 'created_seq', direction: 'asc' } })).map(
          (doc) => doc.content,
        );
  const attachedConfigs: unknown[] = [];
  for (const laui of Array.isArray(task.attached_config_lauis) ? (task.attached_config_lauis as string[]) : []) {
    const doc = await items.peek(laui);
    if (doc && !doc.is_deleted) attachedConfigs.push(doc.content);
  }
  return mergeTaskConfig({
    workflowConfigs,
    attachedConfigs,
    inlineConfig: task.config ?? {},
    taskTotalRetries: typeof task.total_retries === 'number' ? task.total_retries : undefined,
    taskRetryInterval: typeof task.retry_interval === 'number' ? task.retry_interval : undefined,
  });
};
