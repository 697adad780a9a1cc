import { expect } from 'chai';
import { convertMarketplaceItem, importableBase } from './convertMarketplaceItem.ts';

const PARENT = '65a0c0ffee0000000000beef';
const FOREIGN = '65a0c0ffee0000000000f00d';

describe('marketplace import: converting a fetched item (spec 4.8)', () => {
  it('given an operator as the marketplace serves it, when converted, then item_type, name and content fields stay, the service fields go, parent_laui is set and is_root is false', () => {
    const served = {
      laui: FOREIGN,
      id: FOREIGN,
      _id: FOREIGN,
      item_type: 'operator.python',
      name: 'extract.operator',
      description: 'Extracts',
      parent_laui: FOREIGN,
      is_root: true,
      access: { owners: { [FOREIGN]: 'true' }, editors: {}, viewers: {} },
      access_patch: { add: { owners: { [FOREIGN]: 'true' } } },
      created_at: '2024-01-01T00:00:00.000Z',
      updated_at: '2024-01-02T00:00:00.000Z',
      deleted_at: null,
      is_deleted: false,
      created_by: FOREIGN,
      updated_by: FOREIGN,
      version: 3,
      pk: `extract.operator-${FOREIGN}`,
      created_seq: 42,
      codeblock: { language: 'python', code: 'def run(c, p):\n    return {"rows": "********"}' },
      bashblock: { language: 'bash', code: 'pip install x' },
      payload: { table: 't' },
    };
    const { body, strippedSecrets } = convertMarketplaceItem(served, 'operator.python', 'extract.operator', PARENT);
    expect(body).to.deep.equal({
      item_type: 'operator.python',
      name: 'extract.operator',
      description: 'Extracts',
      parent_laui: PARENT,
      is_root: false,
      // Code is no credential field: asterisks in it are code.
      codeblock: served.codeblock,
      bashblock: served.bashblock,
      payload: { table: 't' },
    });
    expect(strippedSecrets).to.deep.equal([]);
  });

  it("given an action naming the marketplace's project, account and connection, when converted, then those references are dropped", () => {
    const { body } = convertMarketplaceItem(
      { item_type: 'action', name: 'notify.action', project_laui: FOREIGN, account_laui: FOREIGN, connection_laui: FOREIGN, codeblock: { language: 'javascript', code: 'return 1' }, action_variables: { to: 'ops' } },
      'action',
      'notify.action',
      PARENT,
    );
    expect(body).to.deep.equal({ item_type: 'action', name: 'notify.action', parent_laui: PARENT, is_root: false, codeblock: { language: 'javascript', code: 'return 1' }, action_variables: { to: 'ops' } });
  });

  it("given a connection with masked secrets and the marketplace's queue metrics, when converted, then the masked values and the metrics are left out and the masked paths are named", () => {
    const { body, strippedSecrets } = convertMarketplaceItem(
      {
        item_type: 'connection.postgresql',
        name: 'warehouse',
        content: { host: 'db.example', port: 5432, user: 'etl', password: '********', dsn: 'postgres://etl:********@db.example/dw', options: { api_key: '********', region: 'eu' }, hosts: ['a', '********'] },
        max_parallelism: 4,
        sort_dict: { priority: 'descending' },
        current_parallelism: 2,
        in_queue: 7,
        queue_running: [FOREIGN],
        queue_waiting: [],
      },
      'connection.postgresql',
      'warehouse',
      PARENT,
    );
    expect(body).to.deep.equal({
      item_type: 'connection.postgresql',
      name: 'warehouse',
      parent_laui: PARENT,
      is_root: false,
      content: { host: 'db.example', port: 5432, user: 'etl', options: { region: 'eu' }, hosts: ['a'] },
      max_parallelism: 4,
      sort_dict: { priority: 'descending' },
    });
    expect(strippedSecrets).to.deep.equal(['content.password', 'content.dsn', 'content.options.api_key', 'content.hosts.1']);
  });

  it('given a connection whose content is sealed under another deployment key, when converted, then its masked view is used, else it is left out whole', () => {
    const sealed = { v: 1, iv: 'x', tag: 'y', ct: 'z' };
    const withView = convertMarketplaceItem({ item_type: 'connection', name: 'c', content: { $sealed: sealed, keys: ['host', 'password'], shown: { host: 'h', password: '********' } } }, 'connection', 'c', PARENT);
    expect(withView.body.content).to.deep.equal({ host: 'h' });
    expect(withView.strippedSecrets).to.deep.equal(['content.password']);
    const without = convertMarketplaceItem({ item_type: 'connection', name: 'c', content: { $sealed: sealed, keys: ['host'] } }, 'connection', 'c', PARENT);
    expect(without.body).to.not.have.property('content');
    expect(without.strippedSecrets).to.deep.equal(['content']);
  });

  it('given a fetched item with a __proto__ key, when converted, then it stays a data key and no prototype changes', () => {
    const served = JSON.parse('{"item_type":"payload","name":"p","content":{"__proto__":{"isAdmin":true},"a":1},"__proto__":{"polluted":true}}') as Record<string, unknown>;
    const { body } = convertMarketplaceItem(served, 'payload', 'p', PARENT);
    expect(Object.getPrototypeOf(body)).to.equal(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
    expect(Object.keys(body)).to.include('__proto__');
  });

  it('given item types, when asked whether importable, then operator, action, payload, config and connection with their subtypes are, nothing else is', () => {
    for (const type of ['operator', 'operator.python', 'action', 'payload', 'config', 'connection', 'connection.postgresql', 'connection.postgres', 'connection.custom_kind']) {
      expect(importableBase(type), type).to.not.equal(null);
    }
    for (const type of ['task', 'table', 'html_report', 'skill', 'chat', 'chat_history', 'folder.workflow', 'folder.account', 'nonsense', 'operator.']) {
      expect(importableBase(type), type).to.equal(null);
    }
  });
});
