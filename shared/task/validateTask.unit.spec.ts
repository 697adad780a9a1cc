import { expect } from 'chai';
import { DEFAULT_CONNECTION_OPERATOR_MAPPING } from './systemSettings.ts';
import {
  DATES_REQUIRED_DETAIL,
  END_BEFORE_START_DETAIL,
  ONLY_TASKS_DETAIL,
  connectionOperatorMappingError,
  itemSubtype,
  referencedItems,
  validateTask,
  type ReferencedItem,
  type TaskToValidate,
  type ValidationContext,
} from './validateTask.ts';

const OPERATOR = 'aaaaaaaaaaaaaaaaaaaaaaa1';
const CONNECTION = 'aaaaaaaaaaaaaaaaaaaaaaa2';
const PAYLOAD = 'aaaaaaaaaaaaaaaaaaaaaaa3';
const CONFIG_A = 'aaaaaaaaaaaaaaaaaaaaaaa4';
const CONFIG_B = 'aaaaaaaaaaaaaaaaaaaaaaa5';
const ACTION_PRE = 'aaaaaaaaaaaaaaaaaaaaaaa6';
const ACTION_POST = 'aaaaaaaaaaaaaaaaaaaaaaa7';
const WORKFLOW = 'aaaaaaaaaaaaaaaaaaaaaaa8';

const task = (overrides: TaskToValidate = {}): TaskToValidate => ({
  item_type: 'task',
  frequency: 'ADHOC',
  parent_laui: WORKFLOW,
  operator_laui: OPERATOR,
  connection_laui: CONNECTION,
  payload_laui: null,
  attached_config_lauis: [],
  actions: { create_actions: [], pre_actions: [], running_actions: [], post_actions: [] },
  ...overrides,
});

const found = (item_type: string, deleted = false): ReferencedItem => ({ item_type, deleted });

const allItems = (): Map<string, ReferencedItem> =>
  new Map<string, ReferencedItem>([
    [OPERATOR, found('operator.python')],
    [CONNECTION, found('connection.postgresql')],
    [PAYLOAD, found('payload')],
    [CONFIG_A, found('config')],
    [CONFIG_B, found('config')],
    [ACTION_PRE, found('action')],
    [ACTION_POST, found('action')],
    [WORKFLOW, found('folder.workflow')],
  ]);

const context = (overrides: Partial<ValidationContext> = {}): ValidationContext => ({
  enforce_connection_operator_mapping: false,
  connection_operator_mapping: DEFAULT_CONNECTION_OPERATOR_MAPPING,
  items: allItems(),
  ...overrides,
});

const detailOf = (result: ReturnType<typeof validateTask>): string | null => (result.ok ? null : result.detail);

describe('task validation: item type and frequency (spec 4.2 rules 2-3)', () => {
  it('given a valid ADHOC task with every reference present, when validated, then it is ok', () => {
    expect(validateTask(task(), context())).to.deep.equal({ ok: true });
  });

  it('given an item_type other than task, when validated, then the 422 detail is "only tasks can be executed"', () => {
    expect(ONLY_TASKS_DETAIL).to.equal('only tasks can be executed');
    expect(validateTask(task({ item_type: 'action' }), context())).to.deep.equal({
      ok: false,
      status: 422,
      detail: 'only tasks can be executed',
    });
  });

  it('given no item_type (POST /task/run body), when validated, then it is taken as a task', () => {
    const { item_type: _omitted, ...body } = task();
    expect(validateTask(body, context()).ok).to.equal(true);
  });

  it('given an invalid frequency, when validated, then the detail is "invalid cron expression: <value>"', () => {
    expect(detailOf(validateTask(task({ frequency: '* * * *' }), context()))).to.equal('invalid cron expression: * * * *');
    expect(detailOf(validateTask(task({ frequency: '61 * * * *' }), context()))).to.equal('invalid cron expression: 61 * * * *');
    expect(detailOf(validateTask(task({ frequency: 'adhoc' }), context()))).to.equal('invalid cron expression: adhoc');
  });

  it('given no frequency, when validated, then the ADHOC default applies and no dates are needed', () => {
    expect(validateTask(task({ frequency: undefined }), context()).ok).to.equal(true);
  });
});

describe('task validation: dates (spec 4.2 rule 4)', () => {
  const scheduled = (overrides: TaskToValidate): TaskToValidate =>
    task({ frequency: '0 0 * * *', start_date: '2024-01-01T00:00:00Z', end_date: '2024-12-31T00:00:00Z', ...overrides });

  it('given a scheduled task with valid dates, when validated, then it is ok', () => {
    expect(validateTask(scheduled({}), context()).ok).to.equal(true);
  });

  it('given a scheduled task without start_date or end_date, when validated, then the dates-required detail is returned', () => {
    expect(DATES_REQUIRED_DETAIL).to.equal('start_date and end_date required for scheduled tasks');
    for (const overrides of [{ start_date: null }, { end_date: null }, { start_date: undefined, end_date: undefined }, { start_date: 'not a date' }]) {
      expect(detailOf(validateTask(scheduled(overrides), context()))).to.equal(DATES_REQUIRED_DETAIL);
    }
  });

  it('given end_date before start_date, when validated, then the ordering detail is returned', () => {
    expect(END_BEFORE_START_DETAIL).to.equal('end_date must be greater than or equal to start_date');
    expect(detailOf(validateTask(scheduled({ end_date: '2023-12-31T23:59:59Z' }), context()))).to.equal(END_BEFORE_START_DETAIL);
  });

  it('given end_date equal to start_date, when validated, then it is ok', () => {
    expect(validateTask(scheduled({ end_date: '2024-01-01T00:00:00Z' }), context()).ok).to.equal(true);
  });

  it('given an ADHOC task with no dates or reversed dates, when validated, then dates are not checked', () => {
    expect(validateTask(task({ start_date: '2024-02-01T00:00:00Z', end_date: '2024-01-01T00:00:00Z' }), context()).ok).to.equal(true);
  });
});

describe('task validation: connection-operator mapping (spec 4.2 rule 5)', () => {
  const withTypes = (operatorType: string, connectionType: string): Map<string, ReferencedItem> => {
    const items = allItems();
    items.set(OPERATOR, found(operatorType));
    items.set(CONNECTION, found(connectionType));
    return items;
  };

  it('given enforcement off, when an unsupported pair is validated, then any pair is accepted', () => {
    expect(validateTask(task(), context({ items: withTypes('operator.sql', 'connection.aws') })).ok).to.equal(true);
  });

  it('given enforcement on and a supported pair, when validated, then it is ok', () => {
    const items = withTypes('operator.sql', 'connection.postgresql');
    expect(validateTask(task(), context({ enforce_connection_operator_mapping: true, items })).ok).to.equal(true);
  });

  it('given enforcement on and an unsupported pair, when validated, then the detail names both subtypes and the allowed types', () => {
    const items = withTypes('operator.sql', 'connection.aws');
    expect(detailOf(validateTask(task(), context({ enforce_connection_operator_mapping: true, items })))).to.equal(
      'connection subtype aws does not support operator subtype sql; allowed operator types: python, javascript',
    );
  });

  it('given a connection subtype absent from the mapping, when checked, then the `*` entry applies, else nothing is allowed', () => {
    expect(connectionOperatorMappingError('connection.snowflake', 'operator.python', { '*': ['python'] })).to.equal(null);
    expect(connectionOperatorMappingError('connection.snowflake', 'operator.python', { postgresql: ['sql'] })).to.equal(
      'connection subtype snowflake does not support operator subtype python; allowed operator types: none',
    );
  });

  it('given an allowed entry `*`, when checked, then any operator subtype is accepted', () => {
    expect(connectionOperatorMappingError('connection.aws', 'operator.anything', { aws: ['*'] })).to.equal(null);
  });

  it('given types without a dot, when their subtype is asked, then the type names itself', () => {
    expect(itemSubtype('connection.postgresql')).to.equal('postgresql');
    expect(itemSubtype('operator')).to.equal('operator');
    expect(connectionOperatorMappingError('connection', 'operator', { connection: ['operator'] })).to.equal(null);
  });

  it('given enforcement on and a missing operator, when validated, then the referenced-items detail is returned instead', () => {
    const items = allItems();
    items.delete(OPERATOR);
    expect(detailOf(validateTask(task(), context({ enforce_connection_operator_mapping: true, items })))).to.equal(
      `operator item not found: ${OPERATOR}`,
    );
  });
});

describe('task validation: referenced items (spec 4.2 rule 2)', () => {
  const full = (): TaskToValidate =>
    task({
      payload_laui: PAYLOAD,
      attached_config_lauis: [CONFIG_A, CONFIG_B],
      actions: { create_actions: [], pre_actions: [{ laui: ACTION_PRE }], running_actions: [], post_actions: [{ laui: ACTION_POST }] },
    });

  it('given every referenced item present, when validated, then it is ok', () => {
    expect(validateTask(full(), context()).ok).to.equal(true);
  });

  it('given a missing operator and a deleted connection, when validated, then both are listed joined by "; "', () => {
    const items = allItems();
    items.set(OPERATOR, null);
    items.set(CONNECTION, found('connection.postgresql', true));
    expect(detailOf(validateTask(full(), context({ items })))).to.equal(
      `operator item not found: ${OPERATOR}; connection item not found: ${CONNECTION}`,
    );
  });

  it('given references of the wrong item type, when validated, then they count as not found', () => {
    const items = allItems();
    items.set(PAYLOAD, found('config'));
    items.set(WORKFLOW, found('folder.project'));
    expect(detailOf(validateTask(full(), context({ items })))).to.equal(
      `payload item not found: ${PAYLOAD}; workflow item not found: ${WORKFLOW}`,
    );
  });

  it('given missing configs, actions and workflow, when validated, then each is listed in check order', () => {
    const items = allItems();
    for (const laui of [CONFIG_B, ACTION_PRE, ACTION_POST, WORKFLOW]) items.delete(laui);
    expect(detailOf(validateTask(full(), context({ items })))).to.equal(
      [
        `config item not found: ${CONFIG_B}`,
        `action item not found: ${ACTION_PRE}`,
        `action item not found: ${ACTION_POST}`,
        `workflow item not found: ${WORKFLOW}`,
      ].join('; '),
    );
  });

  it('given the same action twice, when references are listed, then it appears once', () => {
    const refs = referencedItems(task({ actions: { pre_actions: [{ laui: ACTION_PRE }], post_actions: [{ laui: ACTION_PRE }] } }));
    expect(refs.filter((ref) => ref.kind === 'action')).to.deep.equal([{ kind: 'action', laui: ACTION_PRE }]);
  });

  it('given a null payload_laui and no parent, when references are listed, then neither is checked', () => {
    const refs = referencedItems(task({ payload_laui: null, parent_laui: undefined }));
    expect(refs.map((ref) => ref.kind)).to.deep.equal(['operator', 'connection']);
  });
});

describe('task validation: check order', () => {
  it('given several problems at once, when validated, then the first in spec order is reported', () => {
    const items = new Map<string, ReferencedItem>();
    const bad = task({ item_type: 'config', frequency: 'nope', start_date: null });
    expect(detailOf(validateTask(bad, context({ items })))).to.equal(ONLY_TASKS_DETAIL);
    expect(detailOf(validateTask({ ...bad, item_type: 'task' }, context({ items })))).to.equal('invalid cron expression: nope');
    expect(detailOf(validateTask({ ...bad, item_type: 'task', frequency: '0 0 * * *' }, context({ items })))).to.equal(DATES_REQUIRED_DETAIL);
  });
});
