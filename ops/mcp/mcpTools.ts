import type { ApiRequest } from './serviceApi.ts';

/** A JSON Schema of a tool's arguments (MCP requires an object schema). */
export interface ToolInputSchema {
  type: 'object';
  properties: Record<string, Record<string, unknown>>;
  required?: string[];
  additionalProperties: boolean;
  [keyword: string]: unknown;
}

/**
 * One MCP tool over one REST route of the service (spec section 4): what the model reads (name,
 * description, JSON Schema) and how its arguments become the route's request. The route does the
 * rest: authentication, validation, access checks, the answer.
 */
export interface ServiceTool {
  name: string;
  description: string;
  inputSchema: ToolInputSchema;
  request(args: Record<string, unknown>): ApiRequest;
  /** A 200 answer that is a failure (POST /logs/query answers `{error}` with 200): its message. */
  failure?(body: unknown): string | null;
}

const laui = (description: string) => ({ type: 'string', pattern: '^[0-9a-f]{24}$', description });
const text = (description: string) => ({ type: 'string', description });
const LOG_CATEGORIES = ['PERFORMANCE', 'CRON', 'TASK_HISTORY', 'CELERY', 'API', 'TASK'];

/** Path parameters are validated by the schema and encoded anyway: they never reshape the path. */
const segment = (value: unknown): string => encodeURIComponent(String(value));

const withoutKey = (args: Record<string, unknown>, key: string): Record<string, unknown> =>
  Object.fromEntries(Object.entries(args).filter(([name]) => name !== key));

export const SERVICE_TOOLS: ReadonlyArray<ServiceTool> = [
  {
    name: 'catalog_get',
    description:
      'Fetch catalog items (GET /api/v1/catalog/get). item_laui alone returns that one item; with item_type, parent_or_child ' +
      '(child = descendants, parent = ancestors) and depth it traverses from it; is_root=true lists root items. Needs VIEW on item_laui when traversing.',
    inputSchema: {
      type: 'object',
      properties: {
        item_laui: laui('Item to fetch or traverse from; required unless is_root is true'),
        is_root: { type: 'boolean', description: 'true lists root-level items; not combined with item_laui, item_type or parent_or_child' },
        item_type: text('Filter by item type (folder.project, task, operator, connection, chat, ...)'),
        parent_or_child: { type: 'string', enum: ['parent', 'child'], description: 'Traversal direction' },
        depth: { type: 'integer', minimum: 1, maximum: 20, description: 'Levels to traverse (default 1)' },
        per_page: { type: 'integer', minimum: 0, maximum: 1000, description: 'Default 10' },
        page: { type: 'integer', minimum: 1, description: 'Default 1' },
        is_deleted: { type: 'boolean', description: 'Include soft-deleted items (default true)' },
        page_token: text('Opaque cursor from a previous page'),
        item_permission: { type: 'string', enum: ['view', 'edit', 'own', 'delete', 'true_parent_edit', 'is_true_parent'] },
        sort_by: text('Sort field'),
        filter_state: text('Filter by state'),
      },
      additionalProperties: false,
    },
    request: (args) => ({ method: 'GET', path: '/api/v1/catalog/get', query: args }),
  },
  {
    name: 'catalog_search',
    description:
      'Search catalog items or links (POST /api/v1/catalog/search). Exactly one of item_filter (item_laui, is_root, item_type, name, parent_laui, ' +
      'item_lauis, get_by_pk, or any field such as state or project_laui) or link_filter (parent_laui, child_laui, true_parent, parent_type, child_type).',
    inputSchema: {
      type: 'object',
      properties: {
        item_filter: { type: 'object', description: 'Fields the items must match' },
        link_filter: { type: 'object', description: 'Fields the links must match' },
        pagination: { type: 'object', description: 'page (1), per_page (10), sort_order (asc|desc by created_at), page_token' },
        projection: { type: 'object', description: 'include / exclude: lists of field names (items only)' },
      },
      additionalProperties: false,
    },
    request: (args) => ({ method: 'POST', path: '/api/v1/catalog/search', body: args }),
  },
  {
    name: 'catalog_create',
    description:
      'Create a catalog item (POST /api/v1/catalog/create): item_type, name, parent_laui (the parent must allow the type and the caller needs EDIT on it) ' +
      'plus the fields of the item type as top-level keys (operator/action: codeblock {language, code}; connection: content; payload: content; ...). ' +
      'Returns {item_laui}.',
    inputSchema: {
      type: 'object',
      properties: {
        item_type: text('Type of the new item'),
        name: text('Name (operators end with .operator, actions with .action)'),
        parent_laui: laui('Parent item; required unless is_root is true'),
        is_root: { type: 'boolean', description: 'Create a root item (no parent_laui)' },
        description: text('Optional description'),
        access_patch: { type: 'object', description: '{add: {owners, editors, viewers}, remove: {...}}, each a map of user or group LAUI to "true"' },
      },
      required: ['item_type', 'name'],
      additionalProperties: true,
    },
    request: (args) => ({ method: 'POST', path: '/api/v1/catalog/create', body: args }),
  },
  {
    name: 'catalog_update',
    description:
      "Change an item's fields (POST /api/v1/catalog/update): item_laui plus the fields to change as top-level keys; needs EDIT on the item " +
      '(OWN to change access_patch). expected_version makes the change conditional on the current version.',
    inputSchema: {
      type: 'object',
      properties: {
        item_laui: laui('Item to change'),
        expected_version: { type: 'integer', minimum: 1, description: 'Refuse the change unless the item is at this version' },
        name: text('New name'),
        description: text('New description'),
        access_patch: { type: 'object', description: 'Access change (needs OWN)' },
      },
      required: ['item_laui'],
      additionalProperties: true,
    },
    request: (args) => ({ method: 'POST', path: '/api/v1/catalog/update', body: args }),
  },
  {
    name: 'task_run',
    description:
      'Run a task (POST /api/v1/task/run): item_laui runs an existing task (logical_date may be overridden); without it a new task is created from ' +
      'name, parent_laui, project_laui, account_laui, operator_laui, connection_laui (plus payload, config, frequency, ...) and run. Execution is ' +
      'asynchronous: read the task state with catalog_get. Returns {item_laui}.',
    inputSchema: {
      type: 'object',
      properties: {
        item_laui: laui('Existing task to run'),
        name: text('New task name'),
        parent_laui: laui('Workflow folder of a new task'),
        project_laui: laui('Project'),
        account_laui: laui('Account'),
        operator_laui: laui('Operator executing the task'),
        connection_laui: laui('Connection used for execution'),
        payload: { description: 'Inline payload; {{variable}} templates allowed' },
        payload_laui: laui('Payload item'),
        config: { type: 'object', description: 'parameters, overridable, not_overridable, total_retries, retry_interval' },
        frequency: text('ADHOC (default) or a 5-part cron expression'),
        logical_date: text('ISO 8601 data period'),
      },
      additionalProperties: true,
    },
    request: (args) => ({ method: 'POST', path: '/api/v1/task/run', body: args }),
  },
  {
    name: 'task_update_state',
    description:
      "Update a task's system-managed fields (POST /api/v1/task/update/{task_laui}): state, user_set_state ('cancel' asks the running worker to stop), " +
      'logical_date, retry_number, ... Only the given fields change.',
    inputSchema: {
      type: 'object',
      properties: {
        task_laui: laui('Task to update'),
        state: text('New state (spec 3.1)'),
        user_set_state: { description: "'cancel', or null to clear it" },
        logical_date: text('ISO 8601'),
      },
      required: ['task_laui'],
      additionalProperties: true,
    },
    request: (args) => ({ method: 'POST', path: `/api/v1/task/update/${segment(args.task_laui)}`, body: withoutKey(args, 'task_laui') }),
  },
  {
    name: 'task_diagnose',
    description: 'Explain why a task does not run (GET /api/v1/task/diagnose/{task_laui}): each check with its severity (blocking, warning, info), title and details.',
    inputSchema: { type: 'object', properties: { task_laui: laui('Task to diagnose') }, required: ['task_laui'], additionalProperties: false },
    request: (args) => ({ method: 'GET', path: `/api/v1/task/diagnose/${segment(args.task_laui)}` }),
  },
  {
    name: 'logs_session_content',
    description:
      "Read a run's log lines (GET /api/v1/logs/session/{session_id}/content), paged: a task's last_run_session_id or an action run's session. " +
      'Filter by level (info, warning, error, critical) and category.',
    inputSchema: {
      type: 'object',
      properties: {
        session_id: { type: 'string', minLength: 1, description: 'Session id' },
        level: text('Only lines of this level'),
        category: text('Only lines of this category'),
        page: { type: 'integer', minimum: 1, description: 'Default 1' },
        per_page: { type: 'integer', minimum: 1, maximum: 500, description: 'Default 50' },
      },
      required: ['session_id'],
      additionalProperties: false,
    },
    request: (args) => ({ method: 'GET', path: `/api/v1/logs/session/${segment(args.session_id)}/content`, query: withoutKey(args, 'session_id') }),
  },
  {
    name: 'logs_query',
    description:
      'Run a SQL SELECT over one category of log files, exposed as the view `logs` (POST /api/v1/logs/query). Columns include timestamp, level, ' +
      'message, session_id, task_laui, task_name. Give date (YYYY-MM-DD) to scan one day only. Returns {columns, rows, row_count}.',
    inputSchema: {
      type: 'object',
      properties: {
        sql: text('SELECT or WITH statement over the view logs; no semicolons'),
        category: { type: 'string', enum: LOG_CATEGORIES, description: 'Log category' },
        date: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'Day to scan (YYYY-MM-DD)' },
      },
      required: ['sql', 'category'],
      additionalProperties: false,
    },
    request: (args) => ({ method: 'POST', path: '/api/v1/logs/query', body: args }),
    failure: (body) => (body !== null && typeof body === 'object' && typeof (body as { error?: unknown }).error === 'string' ? (body as { error: string }).error : null),
  },
  {
    name: 'query_execute',
    description:
      'Run a read-only SQL statement (SELECT, WITH or EXPLAIN) against a connection item (POST /api/v1/query/execute). ' +
      'Returns {columns, rows, row_count, truncated}; at most 10,000 rows.',
    inputSchema: {
      type: 'object',
      properties: {
        connection_laui: laui('Connection item to query'),
        sql: text('SELECT, WITH or EXPLAIN statement'),
      },
      required: ['connection_laui', 'sql'],
      additionalProperties: false,
    },
    request: (args) => ({ method: 'POST', path: '/api/v1/query/execute', body: args }),
  },
];

export const serviceToolNamed = (name: string): ServiceTool | undefined => SERVICE_TOOLS.find((tool) => tool.name === name);
