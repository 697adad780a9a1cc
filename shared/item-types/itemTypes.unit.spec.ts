import { expect } from 'chai';
import {
  applyDefaults,
  canonicalItemType,
  itemTypesDocument,
  listItemTypes,
  primaryKey,
  resolveItemType,
  uniqueKey,
  validateItem,
} from './itemTypes.ts';
import { compiledSchemaCount } from './validator.ts';

const id = (char: string): string => char.repeat(24);

const FOLDER_TYPES = [
  'folder.account',
  'folder.project',
  'folder.trash',
  'folder.users',
  'folder.user',
  'folder.action',
  'folder.asset',
  'folder.workflow',
  'folder.operator',
  'folder.payload',
  'folder.connection',
  'folder.bootstrap',
  'folder.config',
  'folder.ai',
  'folder.report',
  'folder.table',
  'folder.chat',
  'folder.skill',
];
const OTHER_TYPES = [
  'operator',
  'action',
  'connection',
  'connection.postgresql',
  'connection.mysql',
  'connection.aws',
  'connection.gcp',
  'connection.azure',
  'payload',
  'config',
  'task',
  'table',
  'html_report',
  'skill',
  'chat',
  'chat_history',
];

describe('item-type registry', () => {
  describe('listing and resolution', () => {
    it('given the registry, when listed, then exactly the folder and item types of the brief are registered', () => {
      expect(listItemTypes().map((definition) => definition.type)).to.have.members([...FOLDER_TYPES, ...OTHER_TYPES]);
      expect(listItemTypes()).to.have.length(FOLDER_TYPES.length + OTHER_TYPES.length);
    });

    it('given folder types, when resolved, then their base is folder; other types have their family or themselves as base', () => {
      for (const type of FOLDER_TYPES) expect(resolveItemType(type)?.base, type).to.equal('folder');
      expect(resolveItemType('connection.gcp')?.base).to.equal('connection');
      expect(resolveItemType('operator')?.base).to.equal('operator');
      expect(resolveItemType('task')?.base).to.equal('task');
      expect(resolveItemType('chat_history')?.base).to.equal('chat_history');
    });

    it('given connection aliases, when canonicalised, then each maps to its canonical connection type', () => {
      const aliases: Record<string, string> = {
        'connection.postgres': 'connection.postgresql',
        'connection.pg': 'connection.postgresql',
        'connection.mariadb': 'connection.mysql',
        'connection.s3': 'connection.aws',
        'connection.athena': 'connection.aws',
        'connection.redshift': 'connection.aws',
        'connection.bigquery': 'connection.gcp',
        'connection.gcs': 'connection.gcp',
        'connection.blob': 'connection.azure',
        'connection.azure_blob': 'connection.azure',
      };
      for (const [alias, canonical] of Object.entries(aliases)) {
        expect(canonicalItemType(alias), alias).to.equal(canonical);
        expect(resolveItemType(alias)?.type, alias).to.equal(canonical);
      }
    });

    it('given an operator subtype, when resolved, then it keeps its type name and uses the operator definition', () => {
      const definition = resolveItemType('operator.python');
      expect(definition?.type).to.equal('operator.python');
      expect(definition?.base).to.equal('operator');
      expect(definition?.namePattern).to.equal('^[a-zA-Z0-9_-]+\\.operator$');
      expect(definition?.schema).to.equal(resolveItemType('operator')?.schema);
      expect(canonicalItemType('operator.python')).to.equal('operator.python');
    });

    it('given an unlisted connection kind, when resolved, then it uses the generic connection definition under its own name', () => {
      const definition = resolveItemType('connection.sftp');
      expect(definition?.type).to.equal('connection.sftp');
      expect(definition?.base).to.equal('connection');
      expect(definition?.defaults).to.deep.equal(resolveItemType('connection')?.defaults);
    });

    it('given unknown or malformed types, when resolved, then null is returned', () => {
      for (const type of ['widget', 'folder.nope', 'folder', 'task.sub', 'operator.', 'operator.a b', 'Operator', '', 'connection.a.b']) {
        expect(resolveItemType(type), type).to.equal(null);
        expect(canonicalItemType(type), type).to.equal(null);
      }
    });

    it('given a prototype property name, when resolved as a type, then it is not mistaken for an alias', () => {
      expect(canonicalItemType('constructor')).to.equal(null);
      expect(canonicalItemType('__proto__')).to.equal(null);
    });
  });

  describe('declarations', () => {
    it('given the task type, when its unique fields are read, then they are name, project_laui, account_laui and partition in that order', () => {
      expect(resolveItemType('task')?.uniqueFields).to.deep.equal(['name', 'project_laui', 'account_laui', 'partition']);
    });

    it('given the task type, when its versioned fields are read, then content fields are versioned and runtime fields are not', () => {
      const versioned = resolveItemType('task')?.versionedFields ?? [];
      expect(versioned).to.include.members(['name', 'description', 'operator_laui', 'connection_laui', 'payload', 'config', 'actions', 'frequency']);
      for (const runtime of ['state', 'latest_heartbeat', 'last_run_date', 'last_run_output', 'retry_number', 'iteration', 'logical_date', 'next_run_date', 'session_id']) {
        expect(versioned, runtime).not.to.include(runtime);
      }
    });

    it('given content-bearing types, when their versioned fields are read, then their content field is versioned', () => {
      expect(resolveItemType('operator')?.versionedFields).to.include.members(['codeblock', 'bashblock']);
      expect(resolveItemType('action')?.versionedFields).to.include.members(['codeblock', 'bashblock']);
      expect(resolveItemType('connection.postgresql')?.versionedFields).to.include('content');
      expect(resolveItemType('payload')?.versionedFields).to.include('content');
      expect(resolveItemType('config')?.versionedFields).to.include.members(['config_type', 'content']);
      expect(resolveItemType('html_report')?.versionedFields).to.include('html');
      expect(resolveItemType('table')?.versionedFields).to.include('schema_definition');
      expect(resolveItemType('table')?.versionedFields).not.to.include('row_count');
      expect(resolveItemType('folder.project')?.versionedFields).not.to.include('folder_metadata');
    });

    it('given non-task types, when their unique fields are read, then siblings are unique by name and chat histories are not constrained', () => {
      for (const type of ['folder.project', 'operator', 'action', 'connection.aws', 'payload', 'config', 'table', 'html_report', 'skill', 'chat']) {
        expect(resolveItemType(type)?.uniqueFields, type).to.deep.equal(['parent_laui', 'name']);
      }
      expect(resolveItemType('chat_history')?.uniqueFields).to.deep.equal([]);
    });

    it('given a definition, when a caller tries to mutate it, then the registry refuses', () => {
      const task = resolveItemType('task');
      expect(() => task?.required.push('state')).to.throw(TypeError);
      expect(() => {
        (task?.defaults.actions as Record<string, unknown[]>).pre_actions?.push(1);
      }).to.throw(TypeError);
      expect(resolveItemType('task')?.required).not.to.include('state');
    });

    it('given the name rules, when read, then operator has the .operator pattern and action and html_report the .action pattern', () => {
      expect(resolveItemType('operator')?.namePattern).to.equal('^[a-zA-Z0-9_-]+\\.operator$');
      expect(resolveItemType('action')?.namePattern).to.equal('^[a-zA-Z0-9_-]+\\.action$');
      expect(resolveItemType('html_report')?.namePattern).to.equal('^[a-zA-Z0-9_-]+\\.action$');
      expect(resolveItemType('task')?.namePattern).to.equal(null);
    });
  });

  describe('defaults', () => {
    it('given a bare task, when defaults are applied, then every spec 2.4 default is filled in', () => {
      const task = applyDefaults('task', { name: 't' });
      expect(task).to.deep.include({
        name: 't',
        frequency: 'ADHOC',
        partition: 'ALL',
        priority: 1,
        total_retries: 0,
        retry_interval: 1,
        state: 'scheduled',
        config: {},
        attached_config_lauis: [],
        actions: { create_actions: [], pre_actions: [], running_actions: [], post_actions: [] },
        payload: null,
        payload_laui: null,
        start_date: null,
        end_date: null,
        user_set_state: null,
        retry_number: 0,
        last_run_output: {},
        actions_status: { pre_actions: [], running_actions: [], post_actions: [] },
      });
    });

    it('given given values, when defaults are applied, then given values win and nested default lists are completed', () => {
      const pre = [{ laui: id('a') }];
      const task = applyDefaults('task', { name: 't', partition: 'EU', priority: 5, payload: { a: 1 }, actions: { pre_actions: pre } });
      expect(task.partition).to.equal('EU');
      expect(task.priority).to.equal(5);
      expect(task.payload).to.deep.equal({ a: 1 });
      expect(task.actions).to.deep.equal({ pre_actions: pre, create_actions: [], running_actions: [], post_actions: [] });
    });

    it('given any type, when defaults are applied, then no common field (is_root, parent_laui, name) is added', () => {
      for (const definition of listItemTypes()) {
        const output = applyDefaults(definition.type, {});
        for (const common of ['is_root', 'parent_laui', 'name', 'item_type', 'access_patch']) {
          expect(output, `${definition.type}.${common}`).not.to.have.property(common);
        }
      }
    });

    it('given an input object, when defaults are applied, then a new object is returned and the input is untouched', () => {
      const input = { name: 't', actions: { pre_actions: [] } };
      const output = applyDefaults('task', input);
      expect(output).not.to.equal(input);
      expect(input).to.deep.equal({ name: 't', actions: { pre_actions: [] } });
    });

    it('given two defaulted tasks, when one default list is mutated, then the other and later results are unaffected', () => {
      const first = applyDefaults('task', { name: 'a' });
      (first.attached_config_lauis as string[]).push(id('b'));
      ((first.actions as Record<string, unknown[]>).pre_actions ?? []).push({ laui: id('c') });
      const second = applyDefaults('task', { name: 'b' });
      expect(second.attached_config_lauis).to.deep.equal([]);
      expect(second.actions).to.deep.equal({ create_actions: [], pre_actions: [], running_actions: [], post_actions: [] });
    });

    it('given a workflow folder, when defaults are applied, then folder_metadata.state is ACTIVE unless given', () => {
      expect(applyDefaults('folder.workflow', { name: 'w' }).folder_metadata).to.deep.equal({ state: 'ACTIVE' });
      expect(applyDefaults('folder.workflow', { name: 'w', folder_metadata: { state: 'PAUSE' } }).folder_metadata).to.deep.equal({
        state: 'PAUSE',
      });
      expect(applyDefaults('folder.workflow', { name: 'w', folder_metadata: { owner: 'x' } }).folder_metadata).to.deep.equal({
        owner: 'x',
        state: 'ACTIVE',
      });
    });

    it('given a connection alias, when defaults are applied, then the connection defaults (max_parallelism 1) apply', () => {
      expect(applyDefaults('connection.postgres', { name: 'db' })).to.deep.equal({ name: 'db', max_parallelism: 1 });
    });

    it('given an unknown type, when defaults are applied, then a shallow copy comes back unchanged', () => {
      const input = { name: 'x' };
      const output = applyDefaults('widget', input);
      expect(output).to.deep.equal({ name: 'x' });
      expect(output).not.to.equal(input);
    });

    it('given a __proto__ key in the body, when defaults are applied, then it stays a data key and the prototype is untouched', () => {
      const input = JSON.parse('{"name":"x","__proto__":{"polluted":true}}') as Record<string, unknown>;
      const output = applyDefaults('payload', input);
      expect(Object.getPrototypeOf(output)).to.equal(Object.prototype);
      expect((output as { polluted?: boolean }).polluted).to.equal(undefined);
      expect(Object.keys(output)).to.include('__proto__');
    });
  });

  describe('unique keys', () => {
    const task = { name: 'load', project_laui: id('a'), account_laui: id('b'), partition: 'ALL' };

    it('given a task, when its pk is taken, then name, project_laui, account_laui and partition are joined with hyphens', () => {
      expect(primaryKey('task', task)).to.equal(`load-${id('a')}-${id('b')}-ALL`);
    });

    it('given a task without partition, when its key is taken before defaults, then there is no key; after defaults it exists', () => {
      const { partition: _partition, ...bare } = task;
      expect(uniqueKey('task', bare)).to.equal(null);
      expect(uniqueKey('task', applyDefaults('task', bare))).to.equal(uniqueKey('task', task));
    });

    it('given two operator subtypes with one name under one folder, when keyed, then the keys collide', () => {
      const item = { name: 'x.operator', parent_laui: id('c') };
      expect(uniqueKey('operator.python', item)).to.equal(uniqueKey('operator.sql', item));
      expect(uniqueKey('operator.python', item)).not.to.equal(uniqueKey('payload', item));
    });

    it('given a root folder or a chat history, when keyed, then no key applies', () => {
      expect(uniqueKey('folder.account', { name: 'acme', is_root: true })).to.equal(null);
      expect(uniqueKey('chat_history', { name: 'c', parent_laui: id('d') })).to.equal(null);
      expect(primaryKey('widget', { name: 'w' })).to.equal(null);
    });
  });

  describe('supported-types document', () => {
    it('given the document, when read, then it has one entry per registered type with the documented keys', () => {
      const document = itemTypesDocument();
      expect(document.types).to.have.length(FOLDER_TYPES.length + OTHER_TYPES.length);
      for (const entry of document.types) {
        expect(entry).to.have.all.keys(
          'item_type',
          'base',
          'description',
          'required',
          'name_pattern',
          'unique_fields',
          'versioned_fields',
          'allowed_children',
          'schema',
        );
        expect(entry.description, entry.item_type).to.be.a('string').and.not.equal('');
        expect(entry.schema.type, entry.item_type).to.equal('object');
      }
    });

    it('given the document, when the task and folder.asset entries are read, then they carry their rules', () => {
      const byType = new Map(itemTypesDocument().types.map((entry) => [entry.item_type, entry]));
      const task = byType.get('task');
      expect(task?.required).to.have.members(['name', 'project_laui', 'account_laui', 'operator_laui', 'connection_laui']);
      expect(task?.unique_fields).to.deep.equal(['name', 'project_laui', 'account_laui', 'partition']);
      expect(byType.get('folder.asset')?.allowed_children).to.have.members([
        'folder.asset',
        'folder.report',
        'folder.table',
        'html_report',
        'table',
        'config',
      ]);
      expect(byType.get('operator')?.name_pattern).to.equal('^[a-zA-Z0-9_-]+\\.operator$');
      expect(itemTypesDocument().aliases['connection.bigquery']).to.equal('connection.gcp');
    });

    it('given the document, when serialised, then it is plain JSON and mutating it is refused', () => {
      const document = itemTypesDocument();
      expect(JSON.parse(JSON.stringify(document))).to.deep.equal(document);
      expect(() => document.types.push(document.types[0]!)).to.throw(TypeError);
      expect(resolveItemType('task')?.schema).not.to.equal(document.types.find((entry) => entry.item_type === 'task')?.schema);
    });
  });

  describe('compilation', () => {
    it('given many validations of already used types, when run, then no schema is compiled again', () => {
      const body = { name: 'n', parent_laui: id('a'), project_laui: id('b'), account_laui: id('c'), operator_laui: id('d'), connection_laui: id('e') };
      validateItem('task', body, 'create');
      validateItem('operator.python', { name: 'a.operator', parent_laui: id('a') }, 'update');
      const before = compiledSchemaCount();
      for (let i = 0; i < 200; i += 1) {
        validateItem('task', body, i % 2 === 0 ? 'create' : 'update');
        validateItem('operator.sql', { name: 'b.operator', parent_laui: id('a') }, 'create');
        validateItem('operator.python', { name: 'bad' }, 'create');
      }
      expect(compiledSchemaCount()).to.equal(before);
      expect(before).to.be.greaterThan(0);
    });

    it('given folder types with identical schemas, when all validated, then they share compiled validators', () => {
      const before = compiledSchemaCount();
      for (const type of ['folder.trash', 'folder.users', 'folder.report', 'folder.table', 'folder.chat', 'folder.skill', 'folder.ai']) {
        validateItem(type, { name: 'f', is_root: true }, 'create');
      }
      expect(compiledSchemaCount() - before).to.be.at.most(1);
    });
  });
});
