import { expect } from 'chai';
import type { AccessPatch } from './applyAccessPatch.ts';
import { groupDecider, LAST_OWNER_DETAIL } from './decide.ts';
import type { GroupActor, GroupCommand } from './group.ts';
import type { GroupEvent } from '../../shared/domain-events/groupEvents.ts';
import { deciderSpecification } from '../../test/support/deciderSpecification.ts';

const laui = '65a0000000000000000000f1';
const ada = '65a000000000000000000001';
const bob = '65a000000000000000000002';
const eve = '65a000000000000000000003';
const team = '65a0000000000000000000aa';

const created: GroupEvent = { type: 'GroupCreated', data: { laui, name: 'Data Team', description: 'first' } };
const grant = (role: 'owners' | 'editors' | 'viewers', principal_laui: string): GroupEvent => ({
  type: 'GroupAccessGranted',
  data: { role, principal_laui },
});
const revoke = (role: 'owners' | 'editors' | 'viewers', principal_laui: string): GroupEvent => ({
  type: 'GroupAccessRevoked',
  data: { role, principal_laui },
});
const actor = (who: string, ...groups: string[]): GroupActor => ({ laui: who, isAdmin: false, principals: [who, ...groups] });
const admin: GroupActor = { laui: eve, isAdmin: true, principals: [eve] };

const given = deciderSpecification(groupDecider);

const update = (by: GroupActor, patch?: AccessPatch, description?: string): GroupCommand => ({
  kind: 'update',
  description,
  patch,
  actor: by,
});

describe('group decider', () => {
  const create: GroupCommand = { kind: 'create', laui, name: 'Data Team', description: 'first', creator: ada, patch: undefined };

  it('given no group, when created, then GroupCreated is followed by the creator as owner', () => {
    given().when(create).then([created, grant('owners', ada)]);
  });

  it('given no group, when created with a patch, then the patch applies on top of the creator ownership', () => {
    given()
      .when({ ...create, patch: { add: { editors: { [bob]: 'true' }, viewers: { [team]: 'true' } } } })
      .then([created, grant('owners', ada), grant('editors', bob), grant('viewers', team)]);
  });

  it('given no group, when the creation patch removes the only owner, then 422 with the last-owner detail', () => {
    given()
      .when({ ...create, patch: { remove: { owners: { [ada]: 'true' } } } })
      .thenFails(422, LAST_OWNER_DETAIL);
  });

  it('given an existing group, when created again on its stream, then 409', () => {
    given(created, grant('owners', ada)).when(create).thenFails(409, 'Group already exists');
  });

  it('given a group, when an editor changes the description and viewers, then only the changes are recorded', () => {
    given(created, grant('owners', ada), grant('editors', bob))
      .when(update(actor(bob), { add: { viewers: { [eve]: 'true' } }, remove: { editors: { [eve]: 'true' } } }, 'second'))
      .then([{ type: 'GroupDescriptionChanged', data: { description: 'second' } }, grant('viewers', eve)]);
  });

  it('given a group, when the owner saves identical values, then nothing is recorded', () => {
    given(created, grant('owners', ada))
      .when(update(actor(ada), { add: { owners: { [ada]: 'true' } } }, 'first'))
      .then([]);
  });

  it('given a group, when the description is omitted, then it is kept', () => {
    given(created, grant('owners', ada)).when(update(actor(ada), undefined, undefined)).then([]);
  });

  it('given a group, when a viewer or a stranger updates it, then 403 Access denied', () => {
    given(created, grant('owners', ada), grant('viewers', bob)).when(update(actor(bob), undefined, 'x')).thenFails(403, 'Access denied');
    given(created, grant('owners', ada)).when(update(actor(eve), undefined, 'x')).thenFails(403, 'Access denied');
  });

  it('given a team as editor, when a member of the team updates, then it is allowed through the team', () => {
    given(created, grant('owners', ada), grant('editors', team))
      .when(update(actor(bob, team), undefined, 'via team'))
      .then([{ type: 'GroupDescriptionChanged', data: { description: 'via team' } }]);
  });

  it('given an editor, when its patch touches owners, then 403: only owners decide who owns', () => {
    given(created, grant('owners', ada), grant('editors', bob))
      .when(update(actor(bob), { add: { owners: { [bob]: 'true' } } }))
      .thenFails(403, 'Access denied');
  });

  it('given an admin who holds no role, when it updates, then it is allowed', () => {
    given(created, grant('owners', ada))
      .when(update(admin, { add: { owners: { [bob]: 'true' } }, remove: { owners: { [ada]: 'true' } } }))
      .then([revoke('owners', ada), grant('owners', bob)]);
  });

  it('given one owner, when a patch removes it, then 422 with the last-owner detail', () => {
    given(created, grant('owners', ada), grant('editors', bob))
      .when(update(actor(ada), { remove: { owners: { [ada]: 'true' } } }))
      .thenFails(422, LAST_OWNER_DETAIL);
  });

  it('given two owners, when one is removed, then the other keeps the group', () => {
    given(created, grant('owners', ada), grant('owners', bob))
      .when(update(actor(ada), { remove: { owners: { [ada]: 'true' } } }))
      .then([revoke('owners', ada)]);
  });

  it('given a group, when its owner deletes it, then every grant is revoked before GroupDeleted', () => {
    given(created, grant('owners', ada), grant('editors', bob))
      .when({ kind: 'delete', actor: actor(ada) })
      .then([revoke('owners', ada), revoke('editors', bob), { type: 'GroupDeleted', data: { laui, name: 'Data Team' } }]);
  });

  it('given a group, when an editor deletes it, then 403 Access denied', () => {
    given(created, grant('owners', ada), grant('editors', bob)).when({ kind: 'delete', actor: actor(bob) }).thenFails(403, 'Access denied');
  });

  it('given no group or a deleted one, when updated or deleted, then 404 Group not found', () => {
    const deleted: GroupEvent = { type: 'GroupDeleted', data: { laui, name: 'Data Team' } };
    given().when({ kind: 'delete', actor: admin }).thenFails(404, 'Group not found');
    given(created, grant('owners', ada), revoke('owners', ada), deleted).when({ kind: 'delete', actor: admin }).thenFails(404, 'Group not found');
    given(created, grant('owners', ada), revoke('owners', ada), deleted).when(update(admin, undefined, 'x')).thenFails(404, 'Group not found');
  });
  it('given a group, when an administrator holding no role deletes it, then every grant is revoked before GroupDeleted', () => {
    given(created, grant('owners', ada))
      .when({ kind: 'delete', actor: admin })
      .then([revoke('owners', ada), { type: 'GroupDeleted', data: { laui, name: 'Data Team' } }]);
  });

  it('given events, when folded, then the group, its description and grants follow them, and a deleted group keeps only its name', () => {
    const fold = (...events: GroupEvent[]) => events.reduce(groupDecider.evolve, groupDecider.initialState());
    expect(fold()).to.deep.equal({ status: 'absent' });
    expect(fold(created, grant('owners', ada), grant('viewers', bob), { type: 'GroupDescriptionChanged', data: { description: 'second' } }, revoke('viewers', bob))).to.deep.equal({
      status: 'active',
      laui,
      name: 'Data Team',
      description: 'second',
      access: { owners: { [ada]: 'true' }, editors: {}, viewers: {} },
    });
    const deleted: GroupEvent = { type: 'GroupDeleted', data: { laui, name: 'Data Team' } };
    expect(fold(created, grant('owners', ada), deleted, grant('owners', bob))).to.deep.equal({ status: 'deleted', laui, name: 'Data Team' });
    expect(fold(grant('owners', ada))).to.deep.equal({ status: 'absent' });
  });
});
