import type { ItemTypeDefinition } from '../types.ts';
import {
  datetime,
  defineType,
  int,
  nullableObj,
  nullableObjectId,
  nullableStr,
  obj,
  objectId,
  objectIdList,
  str,
  stringEnum,
  type JsonSchema,
} from './common.ts';

/** Task (spec 2.4) and the action references inside it (spec 2.5). */

export const TASK_STATES = [
  'created',
  'scheduled',
  'queued_for_connection',
  'queued_in_redis',
  'running',
  'success',
  'error',
  'timeout',
  'cancelled',
  'fail',
] as const;
export const ACTION_KINDS = ['create_actions', 'pre_actions', 'running_actions', 'post_actions'] as const;

const actionReference = (): JsonSchema => ({
  type: 'object',
  properties: {
    laui: objectId(),
    name: str(),
    // "string/ObjectId" in the spec: any string (it may be templated), checked when the action runs.
    connection_laui: nullableStr(),
    action_variables: obj(),
    sla: int(0),
    timeout: int(0),
    action_type: stringEnum(ACTION_KINDS),
  },
  required: ['laui'],
});

const actions = (): JsonSchema => ({
  type: 'object',
  properties: Object.fromEntries(ACTION_KINDS.map((kind) => [kind, { type: 'array', items: actionReference() }])),
  // Closed: a misspelt list name would silently drop (blocking) hooks.
  additionalProperties: false,
});

const taskConfig = (): JsonSchema => ({
  type: 'object',
  properties: {
    parameters: obj(),
    overridable: { type: 'array', items: str() },
    not_overridable: { type: 'array', items: str() },
    total_retries: int(0),
    retry_interval: int(0),
  },
});

const properties: Record<string, JsonSchema> = {
  project_laui: objectId(),
  account_laui: objectId(),
  operator_laui: objectId(),
  connection_laui: objectId(),
  // `ADHOC` or a 5-part cron expression; the cron check is the task validation step's (spec 4.2).
  frequency: { type: 'string', minLength: 1 },
  start_date: datetime(),
  end_date: datetime(),
  logical_date: datetime(),
  payload: {},
  payload_laui: nullableObjectId(),
  config: taskConfig(),
  attached_config_lauis: objectIdList(),
  actions: actions(),
  partition: { type: 'string', minLength: 1 },
  priority: int(),
  total_retries: int(0),
  retry_interval: int(0),
  state: stringEnum(TASK_STATES),
  user_set_state: { type: ['string', 'null'], enum: ['cancel', null] },
  iteration: int(0),
  retry_number: int(0),
  // Numeric input is accepted and converted to int by the update handler (spec 2.4).
  duration: { type: ['number', 'null'] },
  last_run_date: datetime(),
  last_system_updated_date: datetime(),
  latest_heartbeat: datetime(),
  last_run_output: nullableObj(),
  last_run_session_id: nullableStr(),
  session_id: nullableStr(),
  task_instance: nullableStr(),
  executor: nullableStr(),
  actions_status: nullableObj(),
  task_instance_start_date: datetime(),
  task_instance_end_date: datetime(),
  data_interval_start: datetime(),
  data_interval_end: datetime(),
  prev_interval_start: datetime(),
  prev_interval_end: datetime(),
  next_run_date: datetime(),
};

export const taskType: ItemTypeDefinition = defineType({
  type: 'task',
  base: 'task',
  description:
    'Task binding an operator, a connection, a payload and configs; run ad hoc (frequency ADHOC) or on a 5-part cron schedule. Extra keys allowed.',
  properties,
  required: ['project_laui', 'account_laui', 'operator_laui', 'connection_laui'],
  uniqueFields: ['name', 'project_laui', 'account_laui', 'partition'],
  // What the task is; runtime fields (state, heartbeats, last_run_*, logical_date, intervals, ...) are not versioned.
  versionedFields: [
    'project_laui',
    'account_laui',
    'operator_laui',
    'connection_laui',
    'frequency',
    'start_date',
    'end_date',
    'payload',
    'payload_laui',
    'config',
    'attached_config_lauis',
    'actions',
    'partition',
    'priority',
    'total_retries',
    'retry_interval',
  ],
  // logical_date of an ADHOC task defaults to "now" (time-dependent): set by the task command, not here.
  defaults: {
    description: null,
    frequency: 'ADHOC',
    start_date: null,
    end_date: null,
    logical_date: null,
    payload: null,
    payload_laui: null,
    config: {},
    attached_config_lauis: [],
    actions: { create_actions: [], pre_actions: [], running_actions: [], post_actions: [] },
    partition: 'ALL',
    priority: 1,
    total_retries: 0,
    retry_interval: 1,
    state: 'scheduled',
    user_set_state: null,
    iteration: 0,
    retry_number: 0,
    last_run_output: {},
    actions_status: { pre_actions: [], running_actions: [], post_actions: [] },
  },
});
