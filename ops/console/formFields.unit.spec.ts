import { expect } from 'chai';
import { itemTypesDocument } from '../../shared/item-types/itemTypes.ts';
import { FieldError, fieldsOf, requestFields, toInput, type FieldSpec, type FieldValue } from './app/src/catalog/formFields.ts';
import type { ItemTypeInfo } from './app/src/catalog/types.ts';

/** The console's forms come from the service's own item-type document (GET /catalog/item-types/supported-types). */
const info = (itemType: string): ItemTypeInfo => {
  const entry = itemTypesDocument().types.find((type) => type.item_type === itemType);
  if (!entry) throw new Error(`no item type ${itemType}`);
  return entry as ItemTypeInfo;
};

const byKey = (fields: FieldSpec[]): Record<string, FieldSpec> => Object.fromEntries(fields.map((field) => [field.key, field]));
const inputs = (fields: FieldSpec[], item: Record<string, unknown>): Record<string, FieldValue> =>
  Object.fromEntries(fields.map((field) => [field.key, toInput(field, item[field.key])]));

describe('console forms from item-type schemas (formFields)', () => {
  it('given the task type, when its form is built, then it offers what users write (references as pickers) and none of the run bookkeeping', () => {
    const fields = fieldsOf(info('task'));
    const keyed = byKey(fields);
    expect(fields[0]?.key).to.equal('name');
    expect(keyed.operator_laui).to.include({ kind: 'reference', family: 'operator', label: 'Operator', required: true });
    expect(keyed.connection_laui).to.include({ kind: 'reference', family: 'connection', label: 'Connection', required: true });
    expect(keyed.project_laui).to.include({ kind: 'reference', family: 'folder.project', required: true });
    expect(keyed.payload_laui).to.include({ kind: 'reference', label: 'Payload item', required: false });
    expect(keyed.payload).to.include({ kind: 'json', label: 'Payload' });
    expect(keyed.start_date).to.include({ kind: 'datetime' });
    expect(keyed.priority).to.include({ kind: 'integer' });
    for (const bookkeeping of ['state', 'session_id', 'last_run_output', 'iteration', 'user_set_state', 'item_type', 'parent_laui', 'access_patch']) {
      expect(keyed, bookkeeping).not.to.have.property(bookkeeping);
    }
  });

  it('given operators, connections and workflows, when their forms are built, then code gets an editor, enums a choice, and a workflow its state', () => {
    const operator = byKey(fieldsOf(info('operator')));
    expect(operator.codeblock).to.include({ kind: 'code' });
    expect(operator.bashblock).to.include({ kind: 'code' });
    expect(operator.name).to.include({ pattern: '^[a-zA-Z0-9_-]+\\.operator$', required: true });
    const connection = byKey(fieldsOf(info('connection')));
    expect(connection.content).to.include({ kind: 'json' });
    expect(connection.max_parallelism).to.include({ kind: 'integer' });
    expect(byKey(fieldsOf(info('config'))).config_type).to.include({ kind: 'enum' });
    expect(byKey(fieldsOf(info('folder.workflow')))).to.have.property('folder_metadata');
    expect(byKey(fieldsOf(info('folder.project'))), 'the cron fields are the scheduler\'s').not.to.have.property('folder_metadata');
  });

  it('given a filled create form, when its request is made, then empty fields are left out and values have their types', () => {
    const fields = fieldsOf(info('connection'));
    const values = { ...inputs(fields, {}), name: 'warehouse', content: '{"host": "db"}', max_parallelism: '2' };
    expect(requestFields(fields, values, null)).to.deep.equal({ name: 'warehouse', content: { host: 'db' }, max_parallelism: 2 });
  });

  it('given an edit, when its request is made, then only changed fields are sent and a cleared one is null', () => {
    const fields = fieldsOf(info('operator'));
    const item = { name: 'a.operator', description: 'old', codeblock: { language: 'python', code: 'print(1)' }, payload: { n: 1 } };
    const unchanged = inputs(fields, item);
    expect(requestFields(fields, unchanged, item)).to.deep.equal({});
    const edited = { ...unchanged, description: '', codeblock: { language: 'python', code: 'print(2)' } };
    expect(requestFields(fields, edited, item)).to.deep.equal({ description: null, codeblock: { language: 'python', code: 'print(2)' } });
  });

  it('given values of the wrong shape, when the request is made, then the field is named in the error', () => {
    const fields = fieldsOf(info('connection'));
    const badNumber = { ...inputs(fields, {}), name: 'x', max_parallelism: '2.5' };
    expect(() => requestFields(fields, badNumber, null)).to.throw(FieldError, 'Max parallelism must be a whole number');
    const badJson = { ...inputs(fields, {}), name: 'x', content: '{host' };
    try {
      requestFields(fields, badJson, null);
      expect.fail('bad JSON was accepted');
    } catch (error) {
      expect(error).to.be.instanceOf(FieldError);
      expect((error as FieldError).field).to.equal('content');
    }
  });
});
