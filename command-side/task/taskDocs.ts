import { detail, json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { anyDetailSchema } from '../../shared/http/errorBodies.ts';
import { taskType, TASK_STATES } from '../../shared/item-types/schemas/task.ts';
import { TRANSITIONS } from '../../shared/task/transitions.ts';
import { lauiSchema } from '../../shared/validation/validateRequest.ts';
import { MULTIPLE_SCHEMA, PATH_SCHEMA } from './routes.ts';
import { updateSchema } from './updateSchema.ts';

const itemLaui = objectOf({ item_laui: lauiSchema });
const done = objectOf({ message: { type: 'string' }, item_laui: lauiSchema });
const notFound = detail('Item not found: no such task');
const denied = detail('Access denied: EDIT on the task is needed');
const transition = detail('Invalid task state transition: <from> -> <to> (the state table in the tag description)');

/** POST /task/run with item_laui: the existing task is run (logical_date may be given for this run). */
const runExistingSchema = {
  type: 'object',
  properties: { item_laui: lauiSchema, logical_date: { type: 'string', description: 'ISO 8601 datetime; the logical date of this run (422 otherwise). Without it an ADHOC task runs for the current UTC, a scheduled one for the date its schedule set' } },
  required: ['item_laui'],
};

/** The OpenAPI docs of taskRoutes. */
export const taskDocs: RouteDocs = {
  tag: 'Task',
  description: [
    'Run tasks and report their progress. Execution is asynchronous: read the state through the catalog.',
    '',
    // The state machine every route obeys (shared/task/transitions.ts); a refused change is a 409.
    `A task's \`state\` is one of ${TASK_STATES.map((state) => `\`${state}\``).join(', ')}. It changes only along these rows (any other change is refused: 409 \`Invalid task state transition: <from> -> <to> ...\`):`,
    '',
    '| Trigger | From | To |',
    '|---|---|---|',
    ...TRANSITIONS.map((row) => `| ${row.trigger} | ${row.from === 'any' ? 'any state' : row.from.join(', ')} | ${row.to} |`),
  ].join('\n'),
  auth: 'bearer',
  schemas: { TaskUpdate: updateSchema, TaskLauis: MULTIPLE_SCHEMA, RunExistingTask: runExistingSchema },
  routes: [
    {
      method: 'POST',
      path: '/api/v1/task/run',
      summary: 'Create and run a task, or run an existing one',
      description:
        'Without item_laui: a new task (name, parent_laui, project_laui, account_laui, operator_laui and connection_laui required; extra keys kept), or the existing one of the same unique key, then run. With item_laui: that task is run. Each run of an ADHOC task is dated now (its logical_date, so {{ds}} and {{ts}}) unless logical_date is given. Needs EDIT on the task and VIEW on everything it references.',
      body: { schema: { anyOf: [taskType.schema, runExistingSchema] } },
      responses: {
        200: json('Dispatched (or queued for its connection)', itemLaui),
        403: detail('Access denied'),
        404: detail('Item not found (item_laui)'),
        409: detail('Item already exists with the same unique key; or Invalid task state transition: <from> -> <to> (a cancelled task is not run again until dangerously_reset)'),
        422: json('A string (only tasks, cron expression, dates, connection-operator mapping, missing items), the list form, or {task_name, message} when a create action refused', anyDetailSchema),
        503: detail('write_conflict'),
      },
    },
    {
      method: 'POST',
      path: '/api/v1/task/multiple_tasks',
      summary: 'Run several existing tasks',
      description: 'Each task is validated and pre-actioned on its own; those that fail either are left out of the results.',
      body: { schema: MULTIPLE_SCHEMA },
      responses: {
        200: json(
          'The tasks dispatched',
          objectOf({ task_results: { type: 'array', items: objectOf({ task_laui: lauiSchema, execution_result_id: { type: ['string', 'null'] } }) } }),
        ),
        403: denied,
        404: detail('Item not found: <lauis>'),
        409: transition,
      },
    },
    {
      method: 'POST',
      path: '/api/v1/task/update/:task_laui',
      summary: "Update a task's system-managed fields (workers, scheduler)",
      description: 'Only the fields given change. user_set_state cancel asks the running worker to stop.',
      params: { path: PATH_SCHEMA },
      body: { schema: updateSchema },
      responses: { 200: json('Updated', itemLaui), 403: denied, 404: notFound, 409: transition },
    },
    {
      method: 'POST',
      path: '/api/v1/task/finish/:task_laui',
      summary: "Take a finished task off its connection's queue",
      params: { path: PATH_SCHEMA },
      responses: { 200: json('Released; the next queued tasks are dispatched', done), 403: denied, 404: notFound, 503: detail('write_conflict') },
    },
    {
      method: 'POST',
      path: '/api/v1/task/dangerously_reset/:task_laui',
      summary: 'Reset a stuck task to scheduled',
      description: 'Removes it from its connection queue; state scheduled, last_run_output {}, user_set_state null, empty actions_status.',
      params: { path: PATH_SCHEMA },
      responses: { 200: json('Reset', done), 403: denied, 404: notFound },
    },
  ],
};
