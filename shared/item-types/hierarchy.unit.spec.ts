import { expect } from 'chai';
import { allowedChildren, isChildAllowed } from './itemTypes.ts';

// The spec 2.2 "key mappings" table, written out independently of the implementation.
const TABLE: Record<string, string[]> = {
  'folder.account': ['folder.project', 'folder.trash', 'folder.users'],
  'folder.project': [
    'folder.action',
    'folder.asset',
    'folder.workflow',
    'folder.operator',
    'folder.payload',
    'folder.connection',
    'folder.bootstrap',
    'folder.config',
    'folder.ai',
  ],
  'folder.workflow': ['folder.workflow', 'task', 'config', 'connection', 'payload', 'operator', 'action'],
  'folder.operator': ['folder.operator', 'operator'],
  'folder.connection': ['folder.connection', 'connection'],
  'folder.payload': ['folder.payload', 'payload'],
  'folder.config': ['folder.config', 'config'],
  'folder.asset': ['folder.asset', 'folder.report', 'folder.table', 'html_report', 'table', 'config'],
  'folder.ai': ['folder.ai', 'folder.chat', 'folder.skill'],
  'folder.chat': ['folder.chat', 'chat'],
  'folder.skill': ['folder.skill', 'skill'],
  'folder.user': ['chat_history'],
};

// One child each parent must refuse.
const DISALLOWED: Record<string, string> = {
  'folder.account': 'task',
  'folder.project': 'task',
  'folder.workflow': 'folder.project',
  'folder.operator': 'action',
  'folder.connection': 'payload',
  'folder.payload': 'config',
  'folder.config': 'payload',
  'folder.asset': 'operator',
  'folder.ai': 'chat',
  'folder.chat': 'skill',
  'folder.skill': 'chat',
  'folder.user': 'chat',
};

describe('item-type hierarchy (spec 2.2)', () => {
  for (const [parent, children] of Object.entries(TABLE)) {
    it(`given parent ${parent}, when its allowed children are listed, then they are exactly the table row`, () => {
      expect(allowedChildren(parent)).to.have.members(children).and.to.have.length(children.length);
    });

    it(`given parent ${parent}, when each table child is checked, then every one is allowed`, () => {
      expect(children.filter((child) => !isChildAllowed(parent, child))).to.deep.equal([]);
    });

    it(`given parent ${parent}, when ${DISALLOWED[parent]} is checked, then it is refused`, () => {
      expect(isChildAllowed(parent, DISALLOWED[parent] ?? '')).to.equal(false);
    });
  }

  it('given the table, when every parent is covered by a disallowed example, then no row was forgotten', () => {
    expect(Object.keys(DISALLOWED)).to.have.members(Object.keys(TABLE));
  });

  it('given connection subtypes and aliases, when placed under folder.connection, then they are allowed', () => {
    expect(isChildAllowed('folder.connection', 'connection.postgresql')).to.equal(true);
    expect(isChildAllowed('folder.connection', 'connection.postgres')).to.equal(true);
    expect(isChildAllowed('folder.connection', 'connection.s3')).to.equal(true);
    expect(isChildAllowed('folder.connection', 'connection.sftp')).to.equal(true);
    expect(isChildAllowed('folder.workflow', 'connection.azure')).to.equal(true);
  });

  it('given operator subtypes, when placed under folder.operator or folder.workflow, then they are allowed', () => {
    expect(isChildAllowed('folder.operator', 'operator.python')).to.equal(true);
    expect(isChildAllowed('folder.workflow', 'operator.sql')).to.equal(true);
    expect(isChildAllowed('folder.payload', 'operator.python')).to.equal(false);
  });

  it('given a subtype parent, when its children are listed, then it counts as its family (which is unlisted)', () => {
    expect(allowedChildren('connection.postgresql')).to.deep.equal([]);
    expect(allowedChildren('operator.python')).to.deep.equal([]);
    expect(isChildAllowed('connection.postgresql', 'task')).to.equal(false);
  });

  it('given parents the table does not list, when children are listed, then none are allowed', () => {
    for (const parent of ['folder.trash', 'folder.report', 'task', 'operator', 'folder.nope', 'nonsense']) {
      expect(allowedChildren(parent), parent).to.deep.equal([]);
    }
  });

  it('given the users folder, when children are listed, then only user folders are allowed (our addition to the table)', () => {
    expect(allowedChildren('folder.users')).to.deep.equal(['folder.user']);
  });

  it('given an unknown or malformed child type, when checked under a listed parent, then it is refused', () => {
    expect(isChildAllowed('folder.workflow', 'tasks')).to.equal(false);
    expect(isChildAllowed('folder.operator', 'operator.')).to.equal(false);
    expect(isChildAllowed('folder.operator', 'operator.py thon')).to.equal(false);
    expect(isChildAllowed('folder.project', 'folder.unknown')).to.equal(false);
  });

  it('given the returned list, when the caller mutates it, then the registry is unaffected', () => {
    allowedChildren('folder.chat').push('task');
    expect(isChildAllowed('folder.chat', 'task')).to.equal(false);
    expect(allowedChildren('folder.chat')).to.have.length(2);
  });
});
