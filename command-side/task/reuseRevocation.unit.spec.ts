import { expect } from 'chai';
import { MemoryEventStore } from '../../test/support/MemoryEventStore.ts';
import { metadataFor } from '../../shared/events.ts';
import type { ReuseScope } from '../../shared/ports/CodeRunner.ts';
import type { LogEntry, Logger } from '../../shared/ports/Logger.ts';
import fc from 'fast-check';
import { followReuseRevocations, mayRevoke, revocationOf, revokedScopes, type ReuseRevocationDeps } from './reuseRevocation.ts';

const metadata = metadataFor(null, new Date('2026-01-01T00:00:00.000Z'), 'c-1');

/**
 * Reuse processes of three scopes: alice's operator in a folder of a project, bob's action at the
 * project's root, and carol's run of alice's operator. Carol is in the team group, itself in staff.
 */
const ALICE_OP: ReuseScope = { itemLaui: 'op-1', actorLaui: 'alice' };
const BOB_ACTION: ReuseScope = { itemLaui: 'action-1', actorLaui: 'bob' };
const CAROL_OP: ReuseScope = { itemLaui: 'op-1', actorLaui: 'carol' };
const PARENTS: Record<string, string | null> = { 'op-1': 'folder-1', 'folder-1': 'project-1', 'action-1': 'project-1', 'project-1': null };
const GROUPS: Record<string, string[]> = { carol: ['team', 'staff'], team: ['staff'] };

/** A runner holding processes of `scopes`, recording which of them each retire matched. */
const fakeRunner = (scopes: ReuseScope[]) => {
  const retired: ReuseScope[][] = [];
  return {
    retired,
    reuseScopes: () => [...scopes],
    retire: async (match: (scope: ReuseScope) => boolean) => void retired.push(scopes.filter(match)),
  };
};

const depsWith = (runner: ReturnType<typeof fakeRunner>): ReuseRevocationDeps => ({
  runner,
  parentOf: async (laui) => PARENTS[laui] ?? null,
  groupsOf: async (laui) => new Set(GROUPS[laui] ?? []),
});

describe('reuse processes die with their owner\'s revocation (reuseRevocation)', () => {
  describe('revocationOf: which events revoke what', () => {
    const cases: Array<[string, string, Record<string, unknown>, ReturnType<typeof revocationOf>]> = [
      ['user-alice', 'UserPasswordChanged', {}, { kind: 'user', userLaui: 'alice' }],
      ['user-alice', 'UserAuditorRoleChanged', { is_auditor: false }, { kind: 'user', userLaui: 'alice' }],
      ['user-alice', 'UserCreated', {}, null],
      ['group-team', 'GroupAccessRevoked', { role: 'viewers', principal_laui: 'carol' }, { kind: 'membership', principalLaui: 'carol' }],
      ['group-team', 'GroupAccessGranted', { role: 'viewers', principal_laui: 'carol' }, null],
      ['group-team', 'GroupDeleted', { laui: 'team', name: 'team' }, null],
      ['item-op-1', 'ItemUpdated', { changes: { reuse_process: false } }, { kind: 'item', itemLaui: 'op-1' }],
      ['item-op-1', 'ItemRevisionRestored', { changes: { codeblock: {} }, restored_revision_laui: 'r' }, { kind: 'item', itemLaui: 'op-1' }],
      ['item-folder-1', 'ItemAccessChanged', { access: {} }, { kind: 'subtree', itemLaui: 'folder-1' }],
      ['item-op-1', 'ItemSoftDeleted', { at: '' }, { kind: 'subtree', itemLaui: 'op-1' }],
      ['item-op-1', 'ItemHardDeleted', { at: '' }, { kind: 'subtree', itemLaui: 'op-1' }],
      ['item-op-1', 'ItemRestored', { at: '' }, null],
      ['item-op-1', 'ItemCreated', {}, null],
      ['item-task-1', 'TaskSucceeded', { changes: {} }, null],
      ['link-1', 'LinkRemoved', { at: '' }, null],
      ['session-1', 'SessionEnded', { user_laui: 'alice' }, null],
    ];
    for (const [streamId, type, data, expected] of cases) {
      it(`given ${type} on ${streamId}, then ${expected === null ? 'nothing is revoked' : `${expected.kind} is revoked`}`, () => {
        expect(revocationOf({ streamId, type, data })).to.deep.equal(expected);
      });
    }

    it('given every case and any stream of those prefixes with any type, then mayRevoke (stream and type alone) holds wherever revocationOf finds a revocation', () => {
      for (const [streamId, type, data] of cases) {
        if (revocationOf({ streamId, type, data }) !== null) expect(mayRevoke({ streamId, type }), `${type} on ${streamId}`).to.equal(true);
      }
      const types = fc.oneof(fc.constantFrom(...cases.map(([, type]) => type), 'TaskQueued', 'ItemUpdated'), fc.string());
      const streams = fc.tuple(fc.constantFrom('user-', 'group-', 'item-', 'link-', 'queue-', ''), fc.string()).map(([prefix, rest]) => prefix + rest);
      const datas = fc.oneof(fc.constant({}), fc.record({ principal_laui: fc.string() }));
      fc.assert(fc.property(streams, types, datas, (streamId, type, data) => revocationOf({ streamId, type, data }) === null || mayRevoke({ streamId, type })));
    });

    it('given a task\'s lifecycle events and links, then mayRevoke is false: they are not decoded for the follower', () => {
      for (const type of ['TaskQueued', 'TaskDispatched', 'TaskStarted', 'TaskSucceeded']) expect(mayRevoke({ streamId: 'item-task-1', type })).to.equal(false);
      expect(mayRevoke({ streamId: 'queue-c', type: 'TaskLeased' })).to.equal(false);
      expect(mayRevoke({ streamId: 'link-1', type: 'LinkRemoved' })).to.equal(false);
    });
  });

  describe('revokedScopes: the scopes a revocation ends among those holding processes', () => {
    const retiredBy = async (revocation: Parameters<typeof revokedScopes>[1]) => {
      const runner = fakeRunner([ALICE_OP, BOB_ACTION, CAROL_OP]);
      const match = await revokedScopes(depsWith(runner), revocation);
      return match === null ? null : [ALICE_OP, BOB_ACTION, CAROL_OP].filter(match);
    };

    it('given a user\'s change, then every process acting as the user', async () => {
      expect(await retiredBy({ kind: 'user', userLaui: 'alice' })).to.deep.equal([ALICE_OP]);
    });

    it('given a changed item, then its processes for every user and no other item\'s', async () => {
      expect(await retiredBy({ kind: 'item', itemLaui: 'op-1' })).to.deep.equal([ALICE_OP, CAROL_OP]);
    });

    it('given an access change on an ancestor, then the processes of every item under it; on a leaf, its own', async () => {
      expect(await retiredBy({ kind: 'subtree', itemLaui: 'folder-1' })).to.deep.equal([ALICE_OP, CAROL_OP]);
      expect(await retiredBy({ kind: 'subtree', itemLaui: 'project-1' })).to.deep.equal([ALICE_OP, BOB_ACTION, CAROL_OP]);
      expect(await retiredBy({ kind: 'subtree', itemLaui: 'action-1' })).to.deep.equal([BOB_ACTION]);
    });

    it('given a principal that left a group, then its processes and those of its members (nested groups too)', async () => {
      expect(await retiredBy({ kind: 'membership', principalLaui: 'carol' })).to.deep.equal([CAROL_OP]);
      expect(await retiredBy({ kind: 'membership', principalLaui: 'team' })).to.deep.equal([CAROL_OP]);
      expect(await retiredBy({ kind: 'membership', principalLaui: 'staff' })).to.deep.equal([CAROL_OP]);
    });

    it('given a revocation no scope holding processes falls under, then nothing to retire', async () => {
      expect(await retiredBy({ kind: 'item', itemLaui: 'task-1' })).to.equal(null);
      expect(await retiredBy({ kind: 'subtree', itemLaui: 'folder-2' })).to.equal(null);
      expect(await retiredBy({ kind: 'user', userLaui: 'dave' })).to.equal(null);
    });
  });

  describe('followReuseRevocations: the log from its head on', () => {
    it('given a revocation written before it started and others after, when it follows the log, then only the later ones retire, each its scopes', async () => {
      const store = new MemoryEventStore();
      await store.append('user-alice', [{ type: 'UserPasswordChanged', data: { password_hash: 'x' }, metadata }], 'any');
      const runner = fakeRunner([ALICE_OP, BOB_ACTION, CAROL_OP]);
      const entries: LogEntry[] = [];
      const logger: Logger = { log: (entry) => void entries.push(entry), flush: async () => {} };
      const following = await followReuseRevocations({ ...depsWith(runner), eventStore: store, logger });
      try {
        await store.append('item-task-1', [{ type: 'TaskSucceeded', data: { changes: {}, version: 1, revision_laui: null, from: 'running', to: 'success' }, metadata }], 'any');
        await store.append('group-team', [{ type: 'GroupAccessRevoked', data: { role: 'viewers', principal_laui: 'carol' }, metadata }], 'any');
        await store.append('item-action-1', [{ type: 'ItemSoftDeleted', data: { at: metadata.at }, metadata }], 'any');
        for (let waited = 0; runner.retired.length < 2 && waited < 200; waited += 1) await new Promise((resolve) => setTimeout(resolve, 10));

        expect(runner.retired).to.deep.equal([[CAROL_OP], [BOB_ACTION]]);
        expect(entries).to.deep.equal([]);
      } finally {
        await following.close();
      }
    });
  });
});
