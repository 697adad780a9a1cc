import { detail, json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { lauiSchema } from '../../shared/validation/validateRequest.ts';
import { MAX_ACTIVE_RUNS_LIMIT, MAX_BACKFILL_STEPS } from '../../shared/task/backfill/backfillSteps.ts';
import { LIST_QUERY } from './routes.ts';

const nullableString = { type: ['string', 'null'] };
const dateTime = { type: 'string', description: 'ISO 8601 datetime (UTC)' };

const requestSchema = {
  type: 'object',
  properties: {
    item_laui: lauiSchema,
    start_date: { type: 'string', description: 'ISO 8601 date or datetime: the first cron step run is the logical date a schedule starting then would run first' },
    end_date: { type: 'string', description: 'ISO 8601 date or datetime: the last cron step run is the latest not later than it (inclusive)' },
    max_active_runs: { type: 'integer', minimum: 1, maximum: MAX_ACTIVE_RUNS_LIMIT, default: 1 },
  },
  required: ['item_laui', 'start_date', 'end_date'],
};

const pathSchema = { type: 'object', properties: { backfill_id: { type: 'string' } }, required: ['backfill_id'] };

const runSchema = objectOf({
  logical_date: dateTime,
  data_interval_start: dateTime,
  data_interval_end: dateTime,
  state: { type: 'string', description: 'pending, running, not_run (cancelled before it started), or how it ended: success, error, timeout, cancelled, fail, skipped (a pre-action), reset' },
  session_id: nullableString,
  detail: nullableString,
  started_at: nullableString,
  ended_at: nullableString,
  run_task_laui: { ...nullableString, description: 'the task that runs (ran) this step: the backfill\'s task, or a lane (a copy of it) when max_active_runs is above 1; null before it starts' },
});

const progressSchema = objectOf({
  backfill_id: { type: 'string' },
  task_laui: lauiSchema,
  status: { type: 'string', enum: ['running', 'cancelled', 'completed'] },
  start_date: dateTime,
  end_date: dateTime,
  max_active_runs: { type: 'integer' },
  requested_by: nullableString,
  requested_at: dateTime,
  completed_at: nullableString,
  total: { type: 'integer' },
  done: { type: 'integer', description: 'runs ended in success' },
  failed: { type: 'integer', description: 'runs ended otherwise' },
  running: { type: 'integer' },
  pending: { type: 'integer', description: 'steps not started' },
  runs: { type: 'array', items: runSchema },
});

const unknownBackfill = detail('Backfill not found (also for a backfill of a task the caller may not see)');

/** The OpenAPI docs of backfillRoutes (issue 36). */
export const backfillDocs: RouteDocs = {
  tag: 'Backfill',
  description: [
    "Run a scheduled task once per cron step of a past (or any) range, each run with its step's logical_date and data interval, oldest first.",
    `At most ${MAX_BACKFILL_STEPS} steps per backfill; one backfill of a task at a time (409 while one has not completed).`,
    "A task runs one run at a time: a backfill's runs go one after another and wait while the task's own scheduled run is in flight, so max_active_runs above 1 is accepted but one run of a task is in flight at a time.",
    "The runs' events (TaskQueued ... TaskSucceeded) carry `changes.backfill_id`; their success does not move the task's schedule.",
  ].join(' '),
  auth: 'bearer',
  schemas: { BackfillRequest: requestSchema, BackfillProgress: progressSchema },
  routes: [
    {
      method: 'POST',
      path: '/api/v1/task/backfill',
      summary: 'Backfill a scheduled task over a date range',
      description: 'Needs EDIT on the task. The runs act with the rights of the caller and start in the scheduler role.',
      body: { schema: requestSchema },
      responses: {
        200: json('Accepted: the runs start in the background', objectOf({ backfill_id: { type: 'string' } })),
        400: detail('Bad body; start_date later than end_date; ADHOC task; max_active_runs out of 1..32; too many steps; no step in the range'),
        403: detail('Access denied'),
        404: detail('Item not found'),
        409: detail('Backfill <id> of task <laui> is still running: cancel it or wait until it completes'),
        503: detail('write_conflict'),
      },
    },
    {
      method: 'GET',
      path: '/api/v1/task/backfill',
      summary: "A task's backfills, newest first",
      description: 'Needs VIEW on the task (the web console shows them beside the task).',
      params: { query: LIST_QUERY },
      responses: { 200: json("The task's backfills", objectOf({ backfills: { type: 'array', items: progressSchema } })), 403: detail('Access denied'), 404: detail('Item not found') },
    },
    {
      method: 'GET',
      path: '/api/v1/task/backfill/:backfill_id',
      summary: "A backfill's progress",
      description: 'Needs VIEW on the task.',
      params: { path: pathSchema },
      responses: { 200: json('Progress', progressSchema), 404: unknownBackfill },
    },
    {
      method: 'POST',
      path: '/api/v1/task/backfill/:backfill_id/cancel',
      summary: 'Cancel a backfill',
      description: 'Needs EDIT on the task. No new run starts; a run in flight ends normally (cancel it with POST /task/update user_set_state cancel). Cancelling a cancelled backfill changes nothing.',
      params: { path: pathSchema },
      responses: {
        200: json('Cancelled: the progress', progressSchema),
        403: detail('Access denied'),
        404: unknownBackfill,
        409: detail('Backfill <id> has already completed'),
        503: detail('write_conflict'),
      },
    },
  ],
};
