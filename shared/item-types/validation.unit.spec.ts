import { expect } from 'chai';
import { checkRootRules, listItemTypes, rulesEntry, unknownItemTypeEntry, validateItem, type CatalogValidationEntry } from './itemTypes.ts';

const id = (char: string): string => char.repeat(24);
const RULES_MSG = 'parent_laui is required unless is_root is true; is_root true forbids parent_laui';
const OBJECT_ID = '^[0-9a-f]{24}$';
const OPERATOR_NAME = '^[a-zA-Z0-9_-]+\\.operator$';
const ACTION_NAME = '^[a-zA-Z0-9_-]+\\.action$';

const validTask = (): Record<string, unknown> => ({
  item_type: 'task',
  name: 'load_orders',
  parent_laui: id('a'),
  project_laui: id('b'),
  account_laui: id('c'),
  operator_laui: id('d'),
  connection_laui: id('e'),
  frequency: '0 3 * * *',
  start_date: '2024-01-01T00:00:00Z',
  end_date: '2025-01-01',
  logical_date: '2024-06-01T00:00:00.123456+02:00',
  payload: [1, 'two'],
  payload_laui: null,
  config: { parameters: { table: 'orders' }, not_overridable: ['table'], total_retries: 2 },
  attached_config_lauis: [id('f'), id('1')],
  actions: {
    pre_actions: [{ laui: id('2'), action_variables: { x: '{{ds}}' }, timeout: 30 }],
    running_actions: [{ laui: id('3'), sla: 10, connection_laui: '{{conn}}' }],
  },
  partition: 'EU',
  priority: 3,
  state: 'scheduled',
  user_set_state: null,
  duration: 12.5,
  some_extra_key: { anything: true },
});

const at = (entries: CatalogValidationEntry[], ...loc: Array<string | number>): CatalogValidationEntry | undefined =>
  entries.find((entry) => JSON.stringify(entry.loc) === JSON.stringify(['body', ...loc]));

describe('item validation (POST /catalog/create 422 entries)', () => {
  describe('valid bodies', () => {
    it('given a complete task with extra keys, when validated for create, then there are no entries', () => {
      expect(validateItem('task', validTask(), 'create')).to.deep.equal([]);
    });

    it('given one minimal valid body per registered type, when validated for create, then none has entries', () => {
      const minimal: Record<string, Record<string, unknown>> = {
        operator: { name: 'extract.operator' },
        action: { name: 'notify.action' },
        html_report: { name: 'weekly.action' },
        task: { name: 't', project_laui: id('b'), account_laui: id('c'), operator_laui: id('d'), connection_laui: id('e') },
      };
      for (const definition of listItemTypes()) {
        const body = { ...(minimal[definition.type] ?? { name: 'item-1' }), parent_laui: id('a') };
        expect(validateItem(definition.type, body, 'create'), definition.type).to.deep.equal([]);
      }
    });

    it('given a body, when validated, then it is not modified', () => {
      const body = validTask();
      const snapshot = JSON.stringify(body);
      validateItem('task', body, 'create');
      validateItem('task', { ...body, priority: 'high' }, 'create');
      expect(JSON.stringify(body)).to.equal(snapshot);
    });
  });

  describe('required fields', () => {
    // Written out independently of the registry: task needs its bindings, every other type a name.
    const expectedMissing = (type: string): string[] =>
      type === 'task' ? ['name', 'project_laui', 'account_laui', 'operator_laui', 'connection_laui'] : ['name'];

    for (const type of [...listItemTypes().map((definition) => definition.type), 'operator.python', 'connection.postgres']) {
      it(`given an empty ${type} body, when validated for create, then exactly its required fields are reported missing`, () => {
        const entries = validateItem(type, { parent_laui: id('a') }, 'create');
        expect(entries.map((entry) => entry.type)).to.satisfy((types: string[]) => types.every((kind) => kind === 'missing'));
        expect(entries.map((entry) => entry.loc[1])).to.have.members(expectedMissing(type));
        expect(entries).to.have.length(expectedMissing(type).length);
      });
    }

    it('given an operator without a name, when validated, then the entry has the documented shape', () => {
      expect(validateItem('operator', { parent_laui: id('a') }, 'create')).to.deep.equal([
        {
          type: 'missing',
          loc: ['body', 'name'],
          msg: 'Field required',
          input: null,
          expected_format: { name: 'name', datatype: 'string', required: true, regex: OPERATOR_NAME },
        },
      ]);
    });

    it('given a task without operator_laui, when validated, then expected_format says ObjectId, required, with its regex', () => {
      const { operator_laui: _operator, ...body } = validTask();
      expect(at(validateItem('task', body, 'create'), 'operator_laui')?.expected_format).to.deep.equal({
        name: 'operator_laui',
        datatype: 'ObjectId',
        required: true,
        regex: OBJECT_ID,
      });
    });
  });

  describe('name patterns', () => {
    const cases: Array<[type: string, valid: string[], invalid: string[], pattern: string]> = [
      ['operator', ['extract.operator', 'my-op_2.operator'], ['extract', 'extract.action', 'bad name.operator', '.operator', 'x.operator.py'], OPERATOR_NAME],
      ['operator.python', ['py_job.operator'], ['py_job.py'], OPERATOR_NAME],
      ['action', ['notify.action', 'A-1_b.action'], ['notify', 'notify.operator', 'no/slash.action', ''], ACTION_NAME],
      ['html_report', ['weekly.action'], ['weekly.html', 'weekly'], ACTION_NAME],
    ];
    for (const [type, valid, invalid, pattern] of cases) {
      it(`given valid ${type} names, when validated, then no entry is reported`, () => {
        for (const name of valid) expect(validateItem(type, { name, parent_laui: id('a') }, 'create'), name).to.deep.equal([]);
      });

      it(`given invalid ${type} names, when validated, then one string_pattern_mismatch entry names the pattern`, () => {
        for (const name of invalid) {
          expect(validateItem(type, { name, parent_laui: id('a') }, 'create'), name).to.deep.equal([
            {
              type: 'string_pattern_mismatch',
              loc: ['body', 'name'],
              msg: `String should match pattern '${pattern}'`,
              input: name,
              expected_format: { name: 'name', datatype: 'string', required: true, regex: pattern },
              ctx: { pattern },
            },
          ]);
        }
      });
    }

    it('given a type without a name pattern, when the name is empty, then string_too_short is reported', () => {
      expect(validateItem('payload', { name: '', parent_laui: id('a') }, 'create')).to.deep.equal([
        {
          type: 'string_too_short',
          loc: ['body', 'name'],
          msg: 'String should have at least 1 character',
          input: '',
          expected_format: { name: 'name', datatype: 'string', required: true, regex: null },
          ctx: { min_length: 1 },
        },
      ]);
    });
  });

  describe('wrong types', () => {
    it('given wrong JSON types in a task, when validated, then each gets its pydantic-style type entry', () => {
      const entries = validateItem(
        'task',
        { ...validTask(), name: 42, priority: '1', config: 'x', attached_config_lauis: id('f'), is_root: 'yes', description: 7 },
        'create',
      );
      expect(at(entries, 'name')).to.deep.include({ type: 'string_type', msg: 'Input should be a valid string', input: 42 });
      expect(at(entries, 'priority')).to.deep.include({ type: 'int_type', msg: 'Input should be a valid integer', input: '1' });
      expect(at(entries, 'config')).to.deep.include({ type: 'dict_type', msg: 'Input should be a valid dictionary', input: 'x' });
      expect(at(entries, 'attached_config_lauis')).to.deep.include({ type: 'list_type', msg: 'Input should be a valid list' });
      expect(at(entries, 'is_root')).to.deep.include({ type: 'bool_type', msg: 'Input should be a valid boolean', input: 'yes' });
      expect(at(entries, 'description')).to.deep.include({ type: 'string_type', input: 7 });
      expect(at(entries, 'priority')?.expected_format).to.deep.equal({ name: 'priority', datatype: 'integer', required: false, regex: null });
      expect(entries).to.have.length(6);
    });

    it('given a fractional integer, a number as string and a negative count, when validated, then int_type, float_type and greater_than_equal', () => {
      const taskEntries = validateItem('task', { ...validTask(), total_retries: 1.5, retry_number: -1 }, 'create');
      expect(at(taskEntries, 'total_retries')?.type).to.equal('int_type');
      expect(at(taskEntries, 'retry_number')).to.deep.include({ type: 'greater_than_equal', msg: 'Input should be greater than or equal to 0', ctx: { ge: 0 } });
      const tableEntries = validateItem('table', { name: 't', parent_laui: id('a'), quality_score: '0.9' }, 'create');
      expect(at(tableEntries, 'quality_score')).to.deep.include({ type: 'float_type', msg: 'Input should be a valid number' });
    });

    it('given enum fields outside their values, when validated, then an enum entry lists the allowed values', () => {
      const state = at(validateItem('task', { ...validTask(), state: 'done', user_set_state: 'stop' }, 'create'), 'state');
      expect(state?.type).to.equal('enum');
      expect(state?.msg).to.match(/^Input should be 'created', 'scheduled', .* or 'fail'$/);
      const cancel = at(validateItem('task', { ...validTask(), user_set_state: 'stop' }, 'create'), 'user_set_state');
      expect(cancel).to.deep.include({ type: 'enum', msg: "Input should be 'cancel'", input: 'stop' });
      const config = at(validateItem('config', { name: 'c', parent_laui: id('a'), config_type: 'other' }, 'create'), 'config_type');
      expect(config?.msg).to.equal("Input should be 'system', 'task', 'UIaction', 'taskAction', 'connection' or 'workflow'");
      const workflow = validateItem('folder.workflow', { name: 'w', parent_laui: id('a'), folder_metadata: { state: 'STOPPED' } }, 'create');
      expect(at(workflow, 'folder_metadata', 'state')).to.deep.include({ type: 'enum', msg: "Input should be 'ACTIVE' or 'PAUSE'" });
    });

    it('given invalid dates, when validated, then datetime_parsing entries; valid ISO forms pass', () => {
      for (const bad of ['2024-02-30', '2023-02-29T00:00:00Z', '2024-13-01', '2024-01-01T24:00:00', 'yesterday', '01/02/2024', '2024-01-01T10:00:00+25:00']) {
        const entry = at(validateItem('task', { ...validTask(), start_date: bad }, 'create'), 'start_date');
        expect(entry, bad).to.deep.include({ type: 'datetime_parsing', msg: 'Input should be a valid datetime', input: bad });
        expect(entry?.expected_format?.datatype).to.equal('datetime');
      }
      for (const good of ['2024-02-29', '2024-01-01T00:00', '2024-01-01 10:20:30', '2024-01-01T10:20:30.5Z', '2024-01-01T10:20:30+0530', null]) {
        expect(validateItem('task', { ...validTask(), start_date: good }, 'create'), String(good)).to.deep.equal([]);
      }
    });

    it('given nested structures with bad members, when validated, then locations point inside them', () => {
      const table = validateItem(
        'table',
        { name: 't', parent_laui: id('a'), schema_definition: { columns: [{ name: 'id', type: 'int' }, { name: 'x', nullable: 'no' }] } },
        'create',
      );
      expect(at(table, 'schema_definition', 'columns', 1, 'type')?.type).to.equal('missing');
      expect(at(table, 'schema_definition', 'columns', 1, 'nullable')?.type).to.equal('bool_type');
      const history = validateItem('chat_history', { name: 'h', parent_laui: id('a'), messages: [{ role: 'user' }] }, 'create');
      expect(at(history, 'messages', 0, 'content')).to.deep.include({
        type: 'missing',
        expected_format: { name: 'messages.0.content', datatype: 'string', required: true, regex: null },
      });
      const connection = validateItem('connection.mysql', { name: 'c', parent_laui: id('a'), max_parallelism: -1, sort_dict: { priority: 'up' } }, 'create');
      expect(at(connection, 'max_parallelism')?.type).to.equal('greater_than_equal');
      expect(at(connection, 'sort_dict', 'priority')?.type).to.equal('enum');
    });
  });

  describe('ObjectIds', () => {
    const bad = [id('A'), 'a'.repeat(23), 'a'.repeat(25), 'g'.repeat(24), 12345, null];
    it('given invalid ObjectIds in task reference fields, when validated, then value_error Invalid ObjectId with the input', () => {
      for (const value of bad) {
        const entries = validateItem('task', { ...validTask(), project_laui: value }, 'create');
        expect(entries, String(value)).to.deep.equal([
          {
            type: 'value_error',
            loc: ['body', 'project_laui'],
            msg: 'Invalid ObjectId',
            input: value,
            expected_format: { name: 'project_laui', datatype: 'ObjectId', required: true, regex: OBJECT_ID },
          },
        ]);
      }
    });

    it('given invalid ObjectIds in lists, action references and optional fields, when validated, then each is an Invalid ObjectId entry', () => {
      const entries = validateItem(
        'task',
        { ...validTask(), attached_config_lauis: [id('1'), 'nope'], actions: { post_actions: [{ laui: 'x' }] }, payload_laui: 'y' },
        'create',
      );
      for (const loc of [['attached_config_lauis', 1], ['actions', 'post_actions', 0, 'laui'], ['payload_laui']]) {
        expect(at(entries, ...loc), loc.join('.')).to.deep.include({ type: 'value_error', msg: 'Invalid ObjectId' });
      }
      expect(at(entries, 'attached_config_lauis', 1)?.expected_format).to.deep.equal({
        name: 'attached_config_lauis.1',
        datatype: 'ObjectId',
        required: false,
        regex: OBJECT_ID,
      });
      expect(validateItem('action', { name: 'a.action', parent_laui: id('a'), project_laui: 'p' }, 'create')[0]?.msg).to.equal('Invalid ObjectId');
    });

    it('given nullable ObjectId fields set to null, when validated, then they are accepted', () => {
      expect(validateItem('task', { ...validTask(), payload_laui: null }, 'create')).to.deep.equal([]);
      expect(validateItem('chat_history', { name: 'h', parent_laui: id('a'), connection_laui: null }, 'create')).to.deep.equal([]);
    });
  });

  describe('extra keys', () => {
    it('given unknown top-level keys on any type, when validated, then they are accepted', () => {
      for (const definition of listItemTypes()) {
        const name = definition.type === 'operator' ? 'x.operator' : definition.type === 'action' || definition.type === 'html_report' ? 'x.action' : 'x';
        const body = { ...(definition.type === 'task' ? validTask() : { name, parent_laui: id('a') }), not_in_schema: [1] };
        expect(validateItem(definition.type, body, 'create'), definition.type).to.deep.equal([]);
      }
    });

    it('given a misspelt list in a task actions object, when validated, then extra_forbidden is reported there', () => {
      expect(validateItem('task', { ...validTask(), actions: { pre_action: [] } }, 'create')).to.deep.equal([
        {
          type: 'extra_forbidden',
          loc: ['body', 'actions', 'pre_action'],
          msg: 'Extra inputs are not permitted',
          input: [],
          expected_format: { name: 'actions.pre_action', datatype: null, required: false, regex: null },
        },
      ]);
    });
  });

  describe('update mode', () => {
    it('given an empty or partial body, when validated for update, then required fields are not required', () => {
      expect(validateItem('task', {}, 'update')).to.deep.equal([]);
      expect(validateItem('task', { state: 'running', latest_heartbeat: '2024-01-01T00:00:00Z' }, 'update')).to.deep.equal([]);
      expect(validateItem('operator', { codeblock: { language: 'python', code: 'x' } }, 'update')).to.deep.equal([]);
    });

    it('given present fields with bad values, when validated for update, then they are still reported, as not required', () => {
      const entries = validateItem('task', { state: 'nope', operator_laui: 'x', name: 3 }, 'update');
      expect(entries.map((entry) => entry.loc[1])).to.have.members(['state', 'operator_laui', 'name']);
      expect(at(entries, 'operator_laui')?.expected_format?.required).to.equal(false);
      expect(validateItem('operator', { name: 'bad' }, 'update')[0]?.type).to.equal('string_pattern_mismatch');
    });

    it('given an invalid parent_laui, when validated, then update mode reports it and create mode leaves it to checkRootRules', () => {
      expect(validateItem('payload', { parent_laui: 'bad' }, 'update')).to.deep.equal([
        {
          type: 'value_error',
          loc: ['body', 'parent_laui'],
          msg: 'Invalid ObjectId',
          input: 'bad',
          expected_format: { name: 'parent_laui', datatype: 'ObjectId', required: false, regex: OBJECT_ID },
        },
      ]);
      expect(validateItem('payload', { name: 'p', parent_laui: 'bad' }, 'create')).to.deep.equal([]);
    });
  });

  describe('unknown item_type', () => {
    it('given an unknown type, when validated, then one enum entry lists the supported types in ctx.expected', () => {
      const entries = validateItem('widget', { name: 'w' }, 'create');
      expect(entries).to.have.length(1);
      expect(entries[0]).to.deep.include({ type: 'enum', loc: ['body', 'item_type'], input: 'widget' });
      expect(entries[0]?.expected_format).to.deep.equal({ name: 'item_type', datatype: 'string', required: true, regex: null });
      const expected = (entries[0]?.ctx as { expected: string[] }).expected;
      expect(expected).to.include.members(['task', 'operator', 'folder.workflow', 'connection.postgresql', 'connection.postgres', 'chat_history']);
      expect(expected).not.to.include('widget');
    });

    it('given an absent or non-string item_type, when the entry is built, then missing or string_type', () => {
      expect(unknownItemTypeEntry(undefined)).to.deep.include({ type: 'missing', loc: ['body', 'item_type'], msg: 'Field required', input: null });
      expect(unknownItemTypeEntry(5)).to.deep.include({ type: 'string_type', input: 5 });
    });
  });

  describe('root rules', () => {
    const rules = (parent_laui: unknown, is_root: unknown): CatalogValidationEntry => ({
      type: 'rules',
      loc: ['body'],
      msg: RULES_MSG,
      input: { parent_laui, is_root },
    });

    it('given is_root true without parent, or a valid parent without is_root, when checked, then no entries', () => {
      expect(checkRootRules({ is_root: true })).to.deep.equal([]);
      expect(checkRootRules({ is_root: true, parent_laui: null })).to.deep.equal([]);
      expect(checkRootRules({ parent_laui: id('a') })).to.deep.equal([]);
      expect(checkRootRules({ parent_laui: id('a'), is_root: false })).to.deep.equal([]);
    });

    it('given is_root true with a parent_laui, when checked, then a value_error on parent_laui and the rules entry', () => {
      expect(checkRootRules({ is_root: true, parent_laui: id('a') })).to.deep.equal([
        {
          type: 'value_error',
          loc: ['body', 'parent_laui'],
          msg: 'parent_laui must not be sent when is_root is true',
          input: id('a'),
          expected_format: { name: 'parent_laui', datatype: 'ObjectId', required: false, regex: OBJECT_ID },
        },
        rules(id('a'), true),
      ]);
    });

    it('given neither is_root nor parent_laui, when checked, then parent_laui is missing and the rules entry follows', () => {
      expect(checkRootRules({ name: 'x' })).to.deep.equal([
        {
          type: 'missing',
          loc: ['body', 'parent_laui'],
          msg: 'Field required',
          input: null,
          expected_format: { name: 'parent_laui', datatype: 'ObjectId', required: true, regex: OBJECT_ID },
        },
        rules(null, false),
      ]);
    });

    it('given an invalid parent ObjectId, when checked, then Invalid ObjectId and the rules entry', () => {
      expect(checkRootRules({ parent_laui: 'abc', is_root: false })).to.deep.equal([
        {
          type: 'value_error',
          loc: ['body', 'parent_laui'],
          msg: 'Invalid ObjectId',
          input: 'abc',
          expected_format: { name: 'parent_laui', datatype: 'ObjectId', required: true, regex: OBJECT_ID },
        },
        rules('abc', false),
      ]);
    });

    it('given is_root as the string "true" and no parent, when checked, then it is not a root and parent_laui is missing', () => {
      expect(checkRootRules({ is_root: 'true' }).map((entry) => entry.type)).to.deep.equal(['missing', 'rules']);
    });

    it('given a body, when the rules entry is built, then it echoes parent_laui and is_root', () => {
      expect(rulesEntry({ parent_laui: 'p', is_root: true, name: 'n' })).to.deep.equal(rules('p', true));
    });

    it('given a create body with an invalid parent, when both checks run as the create route does, then no entry is duplicated', () => {
      const body = { ...validTask(), parent_laui: 'zz', priority: 'x' };
      const entries = [...checkRootRules(body), ...validateItem('task', body, 'create')];
      const locs = entries.map((entry) => JSON.stringify(entry.loc));
      expect(new Set(locs).size).to.equal(locs.length);
      expect(entries.map((entry) => entry.type)).to.deep.equal(['value_error', 'rules', 'int_type']);
    });
  });

  it('given values breaking two rules of one field (type and enum), when validated, then one entry per field, the type one', () => {
    const entries = validateItem('task', { ...validTask(), state: 5, user_set_state: 7 }, 'create');
    expect(entries.map((entry) => [entry.loc[1], entry.type])).to.deep.equal([
      ['state', 'string_type'],
      ['user_set_state', 'string_type'],
    ]);
  });
});
