import type { EventMetadata } from '../../shared/events.ts';
import { hasPlaceholder, renderTemplates, templateVariables } from '../../shared/task/templating.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { TaskDeps } from './taskDeps.ts';
import { mergedConfigOf } from '../../shared/task/mergedConfig.ts';

/**
 * Rule 9 for the payload: the payload item's content wins over the inline payload; `{{variable}}`
 * resolves from task fields, the merged config parameters and the builtins (which win).
 */
export const renderPayload = async (deps: Pick<TaskDeps, 'items'>, task: ItemDoc, metadata: EventMetadata): Promise<unknown> => {
  let payload: unknown = task.payload ?? null;
  if (typeof task.payload_laui === 'string') {
    const item = await deps.items.get(task.payload_laui);
    if (item && !item.is_deleted) payload = item.content ?? null;
  }
  // A payload without a placeholder (most, and every null one) renders as itself: the merged
  // config and the variables are not gathered for it (~2% of the event loop's allocations per run),
  // nor is it copied (its one user, the run's message, is sent as JSON text).
  if (!hasPlaceholder(payload)) return payload;
  const { config } = await mergedConfigOf(deps.items, task);
  return renderTemplates(payload, templateVariables(task, config.parameters, new Date(metadata.at)));
};
