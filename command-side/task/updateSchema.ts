import { TASK_STATES } from '../../shared/item-types/schemas/task.ts';
import { lauiSchema } from '../../shared/validation/validateRequest.ts';


const date = { type: ['string', 'null'] } as const;
const text = { type: ['string', 'null'] } as const;

/** POST /task/update: every listed field optional, nothing else accepted. */
export const updateSchema = {
  type: 'object',
  properties: {
    state: { type: 'string', enum: [...TASK_STATES] },
    user_set_state: { type: ['string', 'null'], enum: ['cancel', null] },
    logical_date: date,
    last_run_date: date,
    last_system_updated_date: date,
    latest_heartbeat: date,
    last_run_output: { type: 'object' },
    payload: {},
    config: { type: 'object' },
    iteration: { type: 'integer' },
    duration: { type: 'number' },
    task_instance: text,
    last_run_session_id: text,
    retry_number: { type: 'integer', minimum: 0 },
    actions_status: { type: 'object' },
    task_instance_start_date: date,
    task_instance_end_date: date,
    session_id: text,
    data_interval_start: date,
    data_interval_end: date,
    prev_interval_start: date,
    prev_interval_end: date,
    next_run_date: date,
    executor: text,
    item_laui: lauiSchema,
  },
  additionalProperties: false,
} as const;
