import { detail, json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { lauiSchema } from '../../shared/validation/validateRequest.ts';
import { catalogItemSchema } from '../catalog/catalogQueryDocs.ts';
import { CRON_STATUS_PATH } from './cronStatusRoutes.ts';
import { DIAGNOSE_PATH, DIAGNOSE_QUERY } from './diagnoseRoutes.ts';
import { READY_TO_RUN_PATH } from './readyToRunRoutes.ts';

const nullableText = { type: ['string', 'null'] } as const;

/** One check of GET /task/diagnose (diagnoseTask.ts CheckResult). */
const checkResultSchema = objectOf({
  triggered: { type: 'boolean' },
  severity: { type: 'string', enum: ['info', 'warning', 'blocking'] },
  title: { type: 'string' },
  details: { type: 'string' },
});

const diagnosisSchema = { type: 'object', additionalProperties: checkResultSchema, description: 'Check results by check name' } as const;

const historySchema = {
  type: 'array',
  items: objectOf({ diagnosed_at: { type: 'string' }, diagnosed_by: { type: ['string', 'null'] }, triggered: { type: 'array', items: { type: 'string' } }, checks: diagnosisSchema }),
} as const;

/** cronView.ts CronView. */
const cronViewSchema = objectOf({
  project_laui: lauiSchema,
  cron_status: { type: ['string', 'null'], enum: ['STARTED', 'RUNNING', 'STOP', 'STOPPED', 'ERROR', null] },
  latest_heartbeat: nullableText,
  start_date: nullableText,
  stop_date: nullableText,
  error: nullableText,
  alive: { type: 'boolean', description: 'STARTED or RUNNING with a heartbeat younger than 3 intervals' },
  interval_seconds: { type: 'number' },
});

const itemNotFound = detail('Item not found with laui: <laui>');

/** The OpenAPI docs of diagnoseRoutes, readyToRunRoutes and cronStatusRoutes (spec 4.2, 4.3, 4.5). */
export const taskQueryDocs: RouteDocs = {
  tag: 'Task',
  auth: 'bearer',
  schemas: { CheckResult: checkResultSchema, CronView: cronViewSchema },
  routes: [
    {
      method: 'GET',
      path: '/api/v1/task/diagnose/:task_laui',
      summary: 'Why a task does not run',
      description: 'Each result is kept in the task’s diagnosis history; history=true answers that history (oldest first) and records nothing. Needs VIEW on the task.',
      params: { path: DIAGNOSE_PATH, query: DIAGNOSE_QUERY },
      responses: {
        200: json('The checks, or the history', { oneOf: [diagnosisSchema, historySchema] }),
        403: detail('Access denied'),
        404: detail('Item not found'),
      },
    },
    {
      method: 'GET',
      path: '/api/v1/catalog/get/tasks_ready_to_run/:project_laui',
      summary: "The project's tasks ready to run now",
      description: 'Needs OWN on the project. Live tasks of the project, started, not cancelled, not past their end, not in a paused workflow, and either scheduled or successful with logical_date reached, or failed with retries left and the retry interval passed; in creation order.',
      params: { path: READY_TO_RUN_PATH },
      responses: { 200: json('The tasks', { type: 'array', items: catalogItemSchema }), 403: detail('Access denied'), 404: itemNotFound },
    },
    {
      method: 'GET',
      path: '/api/v1/cron/status/:project_laui',
      summary: "A project's cron with its live heartbeat",
      tag: 'Cron',
      description: 'Needs VIEW on the project.',
      params: { path: CRON_STATUS_PATH },
      responses: { 200: json('The cron', cronViewSchema), 403: detail('Access denied'), 404: itemNotFound },
    },
  ],
};
