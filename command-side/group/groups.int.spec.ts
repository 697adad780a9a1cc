import { expect } from 'chai';
import type { RecordedEvent } from '../../shared/event-store/EventStore.ts';
import { groupsOfPrincipal } from '../../projections/groups/groupsOfPrincipal.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';

interface GroupView {
  laui: string;
  name: string;
  description: string;
  access: Record<'owners' | 'editors' | 'viewers', Record<string, 'true'>>;
  created_at: string;
  updated_at: string;
}

interface Person {
  laui: string;
  token: string;
}

describe('group endpoints (HTTP, embedded service)', () => {
  let svc: TestService;
  let admin: Person;
  let ada: Person;
  let bob: Person;
  let carl: Person;
  let dan: Person;

  const person = async (username: string): Promise<Person> => {
    const created = await svc.client().post('/api/v1/user/create', {
      json: { username, email: `${username}@example.com`, password: 'password-123', must_change_password: false },
      token: admin.token,
    });
    expect(created.status).to.equal(200);
    const { token } = await svc.login(username, 'password-123');
    return { laui: (created.json as { user_laui: string }).user_laui, token };
  };

  before(async () => {
    svc = await startTestService();
    const { token } = await svc.login();
    const me = await svc.client().get('/api/v1/user/me', { token });
    admin = { laui: (me.json as { laui: string }).laui, token };
    [ada, bob, carl, dan] = [await person('ada'), await person('bob'), await person('carl'), await person('dan')];
  });
  after(async () => svc.stop());

  const save = (who: Person, body: unknown) => svc.client().post('/api/v1/group/create', { json: body, token: who.token });
  const list = (who: Person, relation: string) =>
    svc.client().get(`/api/v1/group/get?relation=${encodeURIComponent(relation)}`, { token: who.token });
  const names = async (who: Person, relation: string) => ((await list(who, relation)).json as GroupView[]).map((group) => group.name);
  const byLaui = (who: Person, laui: string) => svc.client().get(`/api/v1/group/get/${laui}`, { token: who.token });
  const remove = (who: Person, query: string) => svc.client().request('DELETE', `/api/v1/group/delete${query}`, { token: who.token });
  const find = async (who: Person, name: string): Promise<GroupView> => {
    const found = ((await list(who, 'all')).json as GroupView[]).find((group) => group.name === name);
    if (!found) throw new Error(`${name} is not visible to the caller`);
    return found;
  };
  const allEvents = async (): Promise<RecordedEvent[]> => {
    const events: RecordedEvent[] = [];
    for (;;) {
      const page = await svc.service.eventStore.readAll({ after: events.at(-1)?.position ?? 0n });
      if (page.length === 0) return events;
      events.push(...page);
    }
  };
  const is = (...lauis: string[]) => Object.fromEntries(lauis.map((laui) => [laui, 'true']));

  describe('POST /group/create and GET /group/get', () => {
    before(async () => {
      const created = await save(ada, {
        name: 'Data Team',
        description: 'analysts',
        access_patch: { add: { editors: is(bob.laui), viewers: is(carl.laui) } },
      });
      expect(created.status).to.equal(200);
      expect(created.text).to.equal('');
    });

    it('given a new name, when created, then the group has the 2.7 shape with the creator as owner', async () => {
      const group = await find(ada, 'Data Team');
      expect(group).to.have.all.keys('laui', 'name', 'description', 'access', 'created_at', 'updated_at');
      expect(group.laui).to.match(/^[0-9a-f]{24}$/);
      expect(group.description).to.equal('analysts');
      expect(group.access).to.deep.equal({ owners: is(ada.laui), editors: is(bob.laui), viewers: is(carl.laui) });
      expect(Date.parse(group.created_at)).to.be.closeTo(Date.now(), 60_000);
    });

    it('given roles in a group, when each relation is listed, then the caller sees the group exactly where it holds that role', async () => {
      expect(await names(ada, 'owners')).to.include('Data Team');
      expect(await names(ada, 'true_parent')).to.include('Data Team');
      expect(await names(ada, 'false_parents')).to.not.include('Data Team');
      expect(await names(ada, 'editors')).to.not.include('Data Team');
      expect(await names(bob, 'editors')).to.include('Data Team');
      expect(await names(bob, 'owners')).to.not.include('Data Team');
      expect(await names(bob, 'true_parent')).to.not.include('Data Team');
      expect(await names(bob, 'false_parents')).to.include('Data Team');
      expect(await names(carl, 'viewers')).to.include('Data Team');
      expect(await names(carl, 'editors')).to.not.include('Data Team');
      expect(await names(carl, 'false_parents')).to.include('Data Team');
      for (const relation of ['', 'all']) {
        for (const member of [ada, bob, carl]) expect(await names(member, relation)).to.include('Data Team');
        expect(await names(dan, relation)).to.not.include('Data Team');
      }
    });

    it('given a group, when an editor saves its name in another case, then it is updated in place, not duplicated', async () => {
      const before = await find(ada, 'Data Team');
      const updated = await save(bob, { name: 'DATA TEAM', description: 'analysts and engineers', access_patch: { add: { viewers: is(dan.laui) } } });
      expect(updated.status).to.equal(200);
      const after = await find(ada, 'Data Team');
      expect(after.laui).to.equal(before.laui);
      expect(after.name).to.equal('Data Team');
      expect(after.description).to.equal('analysts and engineers');
      expect(after.access.viewers).to.deep.equal(is(carl.laui, dan.laui));
      expect(after.created_at).to.equal(before.created_at);
      expect(Date.parse(after.updated_at)).to.be.at.least(Date.parse(before.updated_at));
      expect(await names(dan, 'viewers')).to.include('Data Team');
      expect(((await list(ada, 'all')).json as GroupView[]).filter((group) => group.name === 'Data Team')).to.have.length(1);
    });

    it('given a group, when a stranger or a viewer saves its name, then 403 Access denied and nothing changes', async () => {
      const stranger = await person('erin');
      for (const who of [stranger, carl]) {
        const reply = await save(who, { name: 'Data Team', description: 'hijacked' });
        expect(reply.status).to.equal(403);
        expect(reply.json).to.deep.equal({ detail: 'Access denied' });
      }
      expect((await find(ada, 'Data Team')).description).to.equal('analysts and engineers');
    });

    it('given an editor, when its patch adds an owner, then 403: only owners decide who owns', async () => {
      const reply = await save(bob, { name: 'Data Team', access_patch: { add: { owners: is(bob.laui) } } });
      expect(reply.status).to.equal(403);
      expect(reply.json).to.deep.equal({ detail: 'Access denied' });
      expect((await find(ada, 'Data Team')).access.owners).to.deep.equal(is(ada.laui));
    });

    it('given the only owner, when a patch removes it, then 422 with a string detail and the owner stays', async () => {
      const reply = await save(ada, { name: 'Data Team', access_patch: { remove: { owners: is(ada.laui) } } });
      expect(reply.status).to.equal(422);
      expect(reply.json).to.deep.equal({ detail: 'Invalid access_patch: a group must keep at least one owner' });
      expect((await find(ada, 'Data Team')).access.owners).to.deep.equal(is(ada.laui));
    });

    it('given an admin who holds no role, when it saves the name, then the group is updated', async () => {
      const reply = await save(admin, { name: 'Data Team', access_patch: { add: { owners: is(bob.laui) } } });
      expect(reply.status).to.equal(200);
      expect((await find(ada, 'Data Team')).access.owners).to.deep.equal(is(ada.laui, bob.laui));
    });
  });

  describe('GET /group/get/{group_laui}', () => {
    it('given a group, when its members (directly or through a member group) or an admin read it by LAUI, then 200 with the same view as the list', async () => {
      await save(carl, { name: 'Readers Inner' });
      const inner = await find(carl, 'Readers Inner');
      await save(ada, { name: 'Readers', access_patch: { add: { editors: is(bob.laui), viewers: is(inner.laui) } } });
      const group = await find(ada, 'Readers');
      for (const who of [ada, bob, carl, admin]) {
        const reply = await byLaui(who, group.laui);
        expect(reply.status).to.equal(200);
        expect(reply.json).to.deep.equal(group);
      }
    });

    it('given a group, when a user who is no member reads it by LAUI, then 404 Group not found, as for an unknown group', async () => {
      await save(ada, { name: 'Private Circle', description: 'not for dan', access_patch: { add: { viewers: is(bob.laui) } } });
      const group = await find(ada, 'Private Circle');
      const reply = await byLaui(dan, group.laui);
      expect(reply.status).to.equal(404);
      expect(reply.json).to.deep.equal({ detail: 'Group not found' });
      expect(reply.text).not.to.include('Private Circle');
      // And not in any listing of dan's either.
      expect(await names(dan, 'all')).not.to.include('Private Circle');
    });

    it('given an unknown or a malformed LAUI, when read, then 404 Group not found', async () => {
      for (const laui of ['65a0000000000000000000ff', 'not-a-laui']) {
        const reply = await byLaui(ada, laui);
        expect(reply.status).to.equal(404);
        expect(reply.json).to.deep.equal({ detail: 'Group not found' });
      }
    });
  });

  describe('DELETE /group/delete', () => {
    let group: GroupView;
    before(async () => {
      expect((await save(ada, { name: 'Short Lived', access_patch: { add: { editors: is(bob.laui) } } })).status).to.equal(200);
      group = await find(ada, 'Short Lived');
    });

    it('given an editor or a stranger, when deleting, then 403 Access denied and the group remains', async () => {
      for (const who of [bob, dan]) {
        const reply = await remove(who, `?group_laui=${group.laui}`);
        expect(reply.status).to.equal(403);
        expect(reply.json).to.deep.equal({ detail: 'Access denied' });
      }
      expect((await byLaui(ada, group.laui)).status).to.equal(200);
    });

    it('given a missing or malformed group_laui, when deleting, then 422 lists it under query', async () => {
      const missing = await remove(ada, '');
      expect(missing.status).to.equal(422);
      expect(missing.json).to.deep.equal({ detail: [{ type: 'missing', loc: ['query', 'group_laui'], msg: 'Field required', input: {} }] });
      const malformed = await remove(ada, '?group_laui=xyz');
      expect(malformed.status).to.equal(422);
      expect((malformed.json as { detail: Array<{ type: string; loc: string[] }> }).detail[0]).to.deep.include({
        type: 'value_error',
        loc: ['query', 'group_laui'],
        msg: 'Invalid ObjectId',
        input: 'xyz',
      });
    });

    it('given an unknown group, when deleting, then 404 Group not found', async () => {
      const reply = await remove(ada, '?group_laui=65a0000000000000000000ff');
      expect(reply.status).to.equal(404);
      expect(reply.json).to.deep.equal({ detail: 'Group not found' });
    });

    it('given its owner, when deleting, then 200 without body, it is gone everywhere, and the name can be taken by anyone', async () => {
      const deleted = await remove(ada, `?group_laui=${group.laui}`);
      expect(deleted.status).to.equal(200);
      expect(deleted.text).to.equal('');
      expect((await byLaui(ada, group.laui)).json).to.deep.equal({ detail: 'Group not found' });
      expect(await names(ada, 'all')).to.not.include('Short Lived');
      expect(await names(bob, 'editors')).to.not.include('Short Lived');
      expect((await remove(ada, `?group_laui=${group.laui}`)).status).to.equal(404);

      expect((await save(dan, { name: 'short lived', description: 'second life' })).status).to.equal(200);
      const reborn = await find(dan, 'short lived');
      expect(reborn.laui).to.not.equal(group.laui);
      expect(reborn.access).to.deep.equal({ owners: is(dan.laui), editors: {}, viewers: {} });
      expect(await names(ada, 'all')).to.not.include('short lived');
    });
  });

  describe('recovery', () => {
    it('given a deletion that died before releasing the name, when the name is saved again, then a new group is created', async () => {
      expect((await save(ada, { name: 'Crashed' })).status).to.equal(200);
      const group = await find(ada, 'Crashed');
      // What the delete route writes first; the release of the name never happened.
      const stream = `group-${group.laui}`;
      const revision = (await svc.service.eventStore.readStream(stream)).length - 1;
      const metadata = { user_laui: ada.laui, correlation_id: 'crash-test', causation_id: null, at: new Date().toISOString() };
      const written = await svc.service.eventStore.append(
        stream,
        [
          { type: 'GroupAccessRevoked', data: { role: 'owners', principal_laui: ada.laui }, metadata },
          { type: 'GroupDeleted', data: { laui: group.laui, name: 'Crashed' }, metadata },
        ],
        revision,
      );
      await svc.service.readModels.waitFor(written.position, 60_000);

      expect((await save(dan, { name: 'Crashed', description: 'again' })).status).to.equal(200);
      const reborn = await find(dan, 'Crashed');
      expect(reborn.laui).to.not.equal(group.laui);
      expect(reborn.access.owners).to.deep.equal(is(dan.laui));
    });
  });

  describe('validation', () => {
    it('given no name, when creating, then 422 lists the missing name under body', async () => {
      const reply = await save(ada, { description: 'nameless' });
      expect(reply.status).to.equal(422);
      expect(reply.json).to.deep.equal({ detail: [{ type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: { description: 'nameless' } }] });
    });

    it('given an unknown or missing relation, when listing, then 422 with an enum or missing entry under query', async () => {
      const bad = await list(ada, 'friends');
      expect(bad.status).to.equal(422);
      const [entry] = (bad.json as { detail: Array<Record<string, unknown>> }).detail;
      expect(entry).to.include({ type: 'enum', input: 'friends' });
      expect(entry?.loc).to.deep.equal(['query', 'relation']);
      const missing = await svc.client().get('/api/v1/group/get', { token: ada.token });
      expect(missing.status).to.equal(422);
      expect(missing.json).to.deep.equal({ detail: [{ type: 'missing', loc: ['query', 'relation'], msg: 'Field required', input: {} }] });
    });

    it('given an access_patch with a bad key, a bad value or an unknown role, when creating, then 422 names each and nothing is created', async () => {
      const badKeyAndValue = await save(ada, {
        name: 'Patched',
        access_patch: { add: { owners: { 'not-a-laui': 'true' }, viewers: { [bob.laui]: true } } },
      });
      expect(badKeyAndValue.status).to.equal(422);
      const entries = (badKeyAndValue.json as { detail: Array<{ type: string; loc: string[] }> }).detail;
      expect(entries.map((entry) => [entry.type, entry.loc])).to.deep.equal([
        ['value_error', ['body', 'access_patch', 'add', 'owners', 'not-a-laui']],
        ['literal_error', ['body', 'access_patch', 'add', 'viewers', bob.laui]],
      ]);
      const unknownRole = await save(ada, { name: 'Patched', access_patch: { add: { admins: is(bob.laui) } } });
      expect(unknownRole.status).to.equal(422);
      expect((unknownRole.json as { detail: Array<{ type: string; loc: string[] }> }).detail[0]).to.deep.include({
        type: 'extra_forbidden',
        loc: ['body', 'access_patch', 'add', 'admins'],
      });
      expect(await names(ada, 'all')).to.not.include('Patched');
      // A refused patch never reserved the name.
      expect((await save(dan, { name: 'Patched' })).status).to.equal(200);
    });
  });

  describe('concurrency', () => {
    it('given 20 concurrent saves of one new name by two users, when they race, then one group exists, its creator gets 200 and the other 403', async () => {
      const racers = Array.from({ length: 20 }, (_, index) => (index % 2 === 0 ? ada : dan));
      const replies = await Promise.all(racers.map((who, index) => save(who, { name: 'Racers', description: `round ${index}` })));
      expect(replies.map((reply) => reply.status).every((status) => status === 200 || status === 403)).to.equal(true);
      const creations = (await allEvents()).filter((event) => event.type === 'GroupCreated' && (event.data as { name: string }).name === 'Racers');
      expect(creations).to.have.length(1);
      const owner = replies[0]?.status === 200 ? ada : dan;
      const group = await find(owner, 'Racers');
      expect(group.access.owners).to.deep.equal(is(owner.laui));
      racers.forEach((who, index) => expect(replies[index]?.status).to.equal(who === owner ? 200 : 403));
      expect(((await list(owner, 'all')).json as GroupView[]).filter((view) => view.name === 'Racers')).to.have.length(1);
    });

    it('given 20 concurrent saves of one new name by one user with different descriptions, when they race, then one creation and 19 updates, all 200', async () => {
      const replies = await Promise.all(Array.from({ length: 20 }, (_, index) => save(carl, { name: 'Solo Racers', description: `round ${index}` })));
      expect(replies.map((reply) => reply.status)).to.deep.equal(Array.from({ length: 20 }, () => 200));
      const events = await allEvents();
      expect(events.filter((event) => event.type === 'GroupCreated' && (event.data as { name: string }).name === 'Solo Racers')).to.have.length(1);
      const group = await find(carl, 'Solo Racers');
      expect(group.description).to.match(/^round \d+$/);
    });
  });

  describe('nested groups', () => {
    it('given a user viewing a group that edits another, when resolved, then both groups are found, cycles included, and the role is usable', async () => {
      expect((await save(ada, { name: 'Inner', access_patch: { add: { viewers: is(carl.laui) } } })).status).to.equal(200);
      const inner = await find(ada, 'Inner');
      expect((await save(ada, { name: 'Outer', access_patch: { add: { editors: is(inner.laui) } } })).status).to.equal(200);
      const outer = await find(ada, 'Outer');

      const readStore = svc.service.readStore;
      expect([...(await groupsOfPrincipal(readStore, carl.laui))]).to.include.members([inner.laui, outer.laui]);
      expect(await names(carl, 'editors')).to.include('Outer');
      expect(await names(carl, 'false_parents')).to.include.members(['Inner', 'Outer']);

      // Carl edits Outer through Inner.
      expect((await save(carl, { name: 'Outer', description: 'edited through Inner' })).status).to.equal(200);
      expect((await byLaui(carl, outer.laui)).json).to.include({ description: 'edited through Inner' });

      // A cycle: Outer becomes a viewer of Inner. The walk still ends, and a group is never its own member.
      expect((await save(ada, { name: 'Inner', access_patch: { add: { viewers: is(outer.laui) } } })).status).to.equal(200);
      const ofCarl = await groupsOfPrincipal(readStore, carl.laui);
      expect(ofCarl.has(inner.laui) && ofCarl.has(outer.laui)).to.equal(true);
      expect([...(await groupsOfPrincipal(readStore, inner.laui))]).to.deep.equal([outer.laui]);
      expect([...(await groupsOfPrincipal(readStore, dan.laui))]).to.not.include.members([inner.laui, outer.laui]);

      // Revoking Carl from Inner removes both memberships.
      expect((await save(ada, { name: 'Inner', access_patch: { remove: { viewers: is(carl.laui) } } })).status).to.equal(200);
      const after = await groupsOfPrincipal(readStore, carl.laui);
      expect(after.has(inner.laui) || after.has(outer.laui)).to.equal(false);
    });
  });

  describe('rebuild', () => {
    it('given groups and memberships, when the service restarts on the same data, then the read models are rebuilt identically', async () => {
      const before = (await list(carl, 'all')).json as GroupView[];
      const membershipsBefore = [...(await groupsOfPrincipal(svc.service.readStore, carl.laui))].sort();
      expect(before.length).to.be.greaterThan(0);
      const dataDir = svc.dataDir;
      await svc.stop({ keepData: true });
      svc = await startTestService({}, {}, dataDir);
      expect((await list(carl, 'all')).json).to.deep.equal(before);
      expect([...(await groupsOfPrincipal(svc.service.readStore, carl.laui))].sort()).to.deep.equal(membershipsBefore);
    });
  });
});
