import { badRequest, forbidden, notFound } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import { projectSchedulerInterval } from '../../shared/task/systemSettings.ts';
import { lauiSchema, validateRequest } from '../../shared/validation/validateRequest.ts';
import { loadSystemSettings } from '../../shared/task/loadSystemSettings.ts';
import { changeCronStatus, type CronStatusChange } from './changeCronStatus.ts';
import type { CronScheduler } from './cronScheduler.ts';
import type { CronDeps } from './schedulerCycle.ts';

export const CRON_ACTIONS = ['START', 'STOP'] as const;
export type CronAction = (typeof CRON_ACTIONS)[number];

export interface ManageCronBody {
  project_laui: string;
  action: CronAction;
}

/**
 * Spec 4.5 lists both a 400 `Invalid action: <value>` and a 422 enum list. The line we draw: the
 * body's shape is the 422 (missing fields, an extra key, an invalid ObjectId, an action that is not
 * a string at all — reported as an `enum` entry naming START and STOP); a string that is not exactly
 * `START` or `STOP` is the 400. Actions are case-sensitive constants: `start` and `PAUSE` are 400.
 */
export const stringAction = {
  type: 'object',
  properties: { project_laui: lauiSchema, action: { type: 'string' } },
  required: ['project_laui', 'action'],
  additionalProperties: false,
} as const;
export const nonStringAction = { ...stringAction, properties: { ...stringAction.properties, action: { enum: [...CRON_ACTIONS] } } } as const;

export const parseManageCronBody = (body: Record<string, unknown>): ManageCronBody => {
  const parsed = validateRequest<{ project_laui: string; action: string }>(typeof body.action === 'string' || body.action === undefined ? stringAction : nonStringAction, body);
  if (!(CRON_ACTIONS as readonly string[]).includes(parsed.action)) throw badRequest(`Invalid action: ${parsed.action}`);
  return parsed as ManageCronBody;
};

export interface ManageCronResult {
  change: CronStatusChange;
  message: string;
}

/**
 * POST /cron/manage after the body is parsed: 404 `Item not found` (no live project folder with that
 * LAUI), 403 without OWN, then the status change (409 on a START of a running cron). START wakes the
 * supervisor so the loop starts at once; STOP waits for this process's loop to make its final pass,
 * so nothing is dispatched for the project once the answer is sent.
 */
export const manageCron = async (
  deps: CronDeps & { scheduler: Pick<CronScheduler, 'wake' | 'settle'>; settle(position: Position | null): Promise<void> },
  principal: Principal,
  body: ManageCronBody,
  metadata: EventMetadata,
): Promise<ManageCronResult> => {
  const project = await deps.items.get(body.project_laui);
  if (!project || project.is_deleted || project.item_type !== 'folder.project') throw notFound('Item not found');
  if (!(await deps.access.can(principal, project, 'OWN'))) throw forbidden();
  const settings = await loadSystemSettings(deps);
  const now = new Date(metadata.at);
  const context = { now, liveBeat: (await deps.liveness.last(project.laui))?.at ?? null, intervalSeconds: projectSchedulerInterval(settings, project.name) };
  const change = await changeCronStatus(deps.eventStore, project.laui, { kind: body.action === 'START' ? 'start' : 'stop' }, context, metadata);
  await deps.settle(change.position);
  if (body.action === 'START') {
    deps.scheduler.wake();
    deps.logger.log({ level: 'info', category: 'CRON', step: 'manage', message: `Cron started (was ${change.before ?? 'never started'})`, project_laui: project.laui });
    return { change, message: `Cron started successfully for project ${project.laui}` };
  }
  if (change.after === 'STOP') await deps.scheduler.settle(project.laui);
  deps.logger.log({ level: 'info', category: 'CRON', step: 'manage', message: `Cron stop requested (was ${change.before ?? 'never started'})`, project_laui: project.laui });
  return { change, message: `Cron stopped successfully for project ${project.laui}` };
};
