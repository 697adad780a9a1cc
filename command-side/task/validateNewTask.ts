import { AppError, unprocessable } from '../../shared/errors.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import { validateTask } from '../../shared/task/validateTask.ts';
import { planItem } from '../catalog/createItem.ts';
import { runReads } from './runReads.ts';
import { validateRun } from './validateRun.ts';
import type { TaskDeps } from './taskDeps.ts';

/**
 * Everything POST /task/run checks of a new task (no item_laui) before anything is written or any
 * create action runs, so a request that fails leaves no task behind (a corrected resend used to
 * find the saved task by its unique key and run it with the old, invalid ids). In this order: the
 * rules that need no lookup (frequency, dates); what catalog create checks (schema, parent, EDIT on
 * the parent: a caller who may not create there learns nothing about the items it names); then
 * rules 2-5 with their lookups (referenced items exist and have the right types, the mapping).
 */
export const validateNewTask = async (deps: TaskDeps, principal: Principal, body: Record<string, unknown>): Promise<void> => {
  const task: Record<string, unknown> = { ...body, item_type: 'task' };
  const early = validateTask(task, { enforce_connection_operator_mapping: false, connection_operator_mapping: {}, items: new Map() });
  if (!early.ok && !early.detail.includes('item not found')) throw unprocessable(early.detail);
  const { item_laui: _ignored, logical_date: _logical, ...fields } = task;
  await planItem(deps, principal, fields);
  const verdict = await validateRun(runReads(deps), task);
  if (!verdict.ok) throw new AppError(verdict.status, verdict.detail);
};
