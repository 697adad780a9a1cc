import { expect } from 'chai';
import { deciderSpecification } from '../../test/support/deciderSpecification.ts';
import type { ItemEvent } from '../../shared/domain-events/itemEvents.ts';
import type { AccessMaps } from '../../shared/access/permissions.ts';
import { itemDecider } from './decide.ts';
import { SERVICE_ACTOR, type ItemActor, type ItemCommand } from './item.ts';
import { refusedTransitionDetail } from '../../shared/task/transitions.ts';
import { inSequence } from '../kernel/handleCommand.ts';

const ADMIN: ItemActor = { isAdmin: true };
const USER: ItemActor = { isAdmin: false };
const LAUI = '65a0000000000000000000c1';
const AT = '2026-01-02T03:04:05.000Z';
const access: AccessMaps = { owners: { '65a000000000000000000001': 'true' }, editors: {}, viewers: {} };

const create = (actor: ItemActor, fields: Record<string, unknown>, itemType = 'config'): Extract<ItemCommand, { kind: 'create' }> => ({
  kind: 'create',
  actor,
  laui: LAUI,
  itemType,
  name: 'settings',
  parentLaui: null,
  parentType: null,
  linkLaui: null,
  isRoot: false,
  fields,
  access,
  revisionLaui: '65a0000000000000000000d1',
});
const update = (actor: ItemActor, changes: Record<string, unknown>, newAccess: AccessMaps | null = null): ItemCommand => ({
  kind: 'update',
  actor,
  laui: LAUI,
  changes,
  versionedFields: ['config_type', 'content'],
  expectedVersion: null,
  access: newAccess,
  revisionLaui: '65a0000000000000000000d2',
});
/** The events of an item as an administrator's create wrote them (any item: the rule is the decider's, not the route's). */
const created = (fields: Record<string, unknown>, itemType = 'config'): ItemEvent[] => itemDecider.decide(create(ADMIN, fields, itemType), itemDecider.initialState());
const deleted: ItemEvent = { type: 'ItemSoftDeleted', data: { at: AT } };

const SYSTEM = { config_type: 'system', content: { check_completion_timeout_seconds: 10 } };
const NORMAL = { config_type: 'task', content: { parameters: { region: 'eu' } } };

describe('catalog decider: system configs are the administrators\' (docs/decisions.md)', () => {
  const given = deciderSpecification(itemDecider);

  it('given nothing, when a non-admin creates a system config, then 403 Access denied', () => {
    given().when(create(USER, SYSTEM)).thenFails(403, 'Access denied');
  });

  it('given nothing, when a non-admin creates another config, or an admin a system one, then it is created', () => {
    expect(itemDecider.decide(create(USER, NORMAL), itemDecider.initialState()).map((event) => event.type)).to.deep.equal(['ItemCreated']);
    expect(created(SYSTEM).map((event) => event.type)).to.deep.equal(['ItemCreated']);
  });

  it('given a non-admin\'s normal config, when they turn it into a system config, then 403; another change is theirs', () => {
    given(...created(NORMAL)).when(update(USER, { config_type: 'system' })).thenFails(403, 'Access denied');
    given(...created(NORMAL))
      .when(update(USER, { content: { parameters: { region: 'us' } } }))
      .then([{ type: 'ItemUpdated', data: { changes: { content: { parameters: { region: 'us' } } }, version: 2, revision_laui: '65a0000000000000000000d2' } }]);
  });

  it('given a system config, when a non-admin changes its content, its access or its config_type, or deletes or restores it, then 403 each', () => {
    const system = created(SYSTEM);
    given(...system).when(update(USER, { content: { check_completion_timeout_seconds: 1 } })).thenFails(403, 'Access denied');
    given(...system).when(update(USER, {}, { ...access, owners: { '65a000000000000000000002': 'true' } })).thenFails(403, 'Access denied');
    given(...system).when(update(USER, { config_type: 'task' })).thenFails(403, 'Access denied');
    given(...system).when({ kind: 'soft-delete', actor: USER, laui: LAUI, at: AT }).thenFails(403, 'Access denied');
    given(...system).when({ kind: 'hard-delete', actor: USER, laui: LAUI, at: AT }).thenFails(403, 'Access denied');
    given(...system, deleted).when({ kind: 'restore', actor: USER, laui: LAUI, at: AT }).thenFails(403, 'Access denied');
  });

  it('given a system config, when the service\'s own changes (task runs, cron status) reach it, then they are refused too', () => {
    given(...created(SYSTEM)).when(update(SERVICE_ACTOR, { content: {} })).thenFails(403, 'Access denied');
  });

  it('given a system config, when an admin changes, deletes and restores it, then each is decided', () => {
    const system = created(SYSTEM);
    given(...system)
      .when(update(ADMIN, { content: { check_completion_timeout_seconds: 20 } }))
      .then([{ type: 'ItemUpdated', data: { changes: { content: { check_completion_timeout_seconds: 20 } }, version: 2, revision_laui: '65a0000000000000000000d2' } }]);
    given(...system).when({ kind: 'soft-delete', actor: ADMIN, laui: LAUI, at: AT }).then([deleted]);
    given(...system).when({ kind: 'hard-delete', actor: ADMIN, laui: LAUI, at: AT }).then([{ type: 'ItemHardDeleted', data: { at: AT } }]);
    given(...system, deleted).when({ kind: 'restore', actor: ADMIN, laui: LAUI, at: AT }).then([{ type: 'ItemRestored', data: { at: AT } }]);
  });

  it('given an item of another type with config_type system among its fields, when a non-admin changes it, then the rule does not apply', () => {
    given(...created({ content: {}, config_type: 'system' }, 'payload'))
      .when(update(USER, { content: { a: 1 } }))
      .then([{ type: 'ItemUpdated', data: { changes: { content: { a: 1 } }, version: 2, revision_laui: '65a0000000000000000000d2' } }]);
  });
});

describe('catalog decider: a task\'s schedule, on the stream\'s state (issue 33)', () => {
  const given = deciderSpecification(itemDecider);
  const SCHEDULED = { frequency: '0 0 * * *', start_date: '2026-01-01T00:00:00Z', end_date: '2027-01-01T00:00:00Z' };
  const ADHOC_WITH_DATES = { frequency: 'ADHOC', start_date: '2026-01-01T00:00:00Z', end_date: '2027-01-01T00:00:00Z' };

  it('given a scheduled task, when another update (decided on an older read) clears its dates, then 422 with the spec detail', () => {
    given(...created(SCHEDULED, 'task')).when(update(USER, { start_date: null, end_date: null })).thenFails(422, 'start_date and end_date required for scheduled tasks');
    given(...created(SCHEDULED, 'task')).when(update(USER, { end_date: '2025-01-01T00:00:00Z' })).thenFails(422, 'end_date must be greater than or equal to start_date');
  });

  it('given an ADHOC task whose dates were just cleared, when another update sets a cron, then 422; with its dates it is taken', () => {
    const cleared: ItemEvent = { type: 'ItemUpdated', data: { changes: { start_date: null, end_date: null }, version: 2, revision_laui: '65a0000000000000000000d3' } };
    given(...created(ADHOC_WITH_DATES, 'task'), cleared).when(update(USER, { frequency: '0 0 * * *' })).thenFails(422, 'start_date and end_date required for scheduled tasks');
    given(...created(ADHOC_WITH_DATES, 'task'))
      .when(update(USER, { frequency: '0 0 * * *' }))
      .then([{ type: 'ItemUpdated', data: { changes: { frequency: '0 0 * * *' }, version: 1, revision_laui: null } }]);
  });

  it('given a task saved with a bad cron, when the service changes its run fields, then they are decided (only a schedule change is checked)', () => {
    given(...created({ ...SCHEDULED, frequency: '61 * * * *' }, 'task'))
      .when(update(SERVICE_ACTOR, { last_run_output: {} }))
      .then([{ type: 'ItemUpdated', data: { changes: { last_run_output: {} }, version: 1, revision_laui: null } }]);
  });
});

describe('catalog decider: every command on every item status', () => {
  const given = deciderSpecification(itemDecider);
  const NOT_FOUND = `Item not found with laui: ${LAUI}`;
  const live = created(NORMAL);
  const hardDeleted: ItemEvent = { type: 'ItemHardDeleted', data: { at: AT } };
  const restored: ItemEvent = { type: 'ItemRestored', data: { at: AT } };
  const edit = (changes: Record<string, unknown>, more: Partial<Extract<ItemCommand, { kind: 'update' }>> = {}): ItemCommand => ({
    ...(update(USER, changes) as Extract<ItemCommand, { kind: 'update' }>),
    ...more,
  });
  const itemUpdated = (changes: Record<string, unknown>, version: number, revision: string | null): ItemEvent => ({
    type: 'ItemUpdated',
    data: { changes, version, revision_laui: revision },
  });
  const REVISION = '65a0000000000000000000d2';
  const other: AccessMaps = { owners: { '65a000000000000000000002': 'true' }, editors: {}, viewers: {} };
  const fold = (...events: ItemEvent[]) => events.reduce(itemDecider.evolve, itemDecider.initialState());

  describe('create', () => {
    it('given nothing, when created, then ItemCreated at version 1 carries the command as given', () => {
      given()
        .when(create(USER, NORMAL))
        .then([
          {
            type: 'ItemCreated',
            data: {
              laui: LAUI,
              item_type: 'config',
              name: 'settings',
              parent_laui: null,
              parent_type: null,
              link_laui: null,
              is_root: false,
              fields: NORMAL,
              access,
              version: 1,
              revision_laui: '65a0000000000000000000d1',
            },
          },
        ]);
    });

    it('given nothing, when a marketplace import creates, then ItemCreated records its source (its url and item id only)', () => {
      const source = { marketplace_url: 'https://market.example', item_id: 'm-1', extra: 'x' };
      const imported = { ...create(USER, NORMAL), importedFrom: source };
      const [event] = itemDecider.decide(imported, itemDecider.initialState());
      expect(event?.data).to.deep.include({ imported_from: { marketplace_url: 'https://market.example', item_id: 'm-1' } });
    });

    it('given a live, deleted or hard-deleted item, when created again, then 409 Item already exists', () => {
      given(...live).when(create(USER, NORMAL)).thenFails(409, 'Item already exists');
      given(...live, deleted).when(create(USER, NORMAL)).thenFails(409, 'Item already exists');
      given(...live, hardDeleted).when(create(USER, NORMAL)).thenFails(409, 'Item already exists');
    });
  });

  describe('update', () => {
    it('given no item or a hard-deleted one, when updated, then 404 with its laui', () => {
      given().when(edit({ name: 'x' })).thenFails(404, NOT_FOUND);
      given(...live, hardDeleted).when(edit({ name: 'x' })).thenFails(404, NOT_FOUND);
    });

    it('given a deleted item, when updated, then 400 restore it first', () => {
      given(...live, deleted).when(edit({ name: 'x' })).thenFails(400, 'Invalid argument: the item is deleted; restore it before updating');
    });

    it('given an item at version 1, when updated expecting another version, then 409 naming both; expecting 1, then decided', () => {
      given(...live)
        .when(edit({ content: {} }, { expectedVersion: 2 }))
        .thenFails(409, 'Item version conflict: expected version 2, current version 1');
      given(...live)
        .when(edit({ content: {} }, { expectedVersion: 1 }))
        .then([itemUpdated({ content: {} }, 2, REVISION)]);
    });

    it('given an item moved on by a versioned change, when updated expecting the version it had, then 409', () => {
      given(...live, itemUpdated({ content: {} }, 2, REVISION))
        .when(edit({ name: 'x' }, { expectedVersion: 1 }))
        .thenFails(409, 'Item version conflict: expected version 1, current version 2');
    });

    it('given an item, when a versioned field changes, then the version steps and the revision is recorded; other fields alone keep both', () => {
      given(...live).when(edit({ content: { a: 1 } })).then([itemUpdated({ content: { a: 1 } }, 2, REVISION)]);
      given(...live).when(edit({ description: 'd' })).then([itemUpdated({ description: 'd' }, 1, null)]);
      given(...live).when(edit({ description: 'd', config_type: 'payload' })).then([itemUpdated({ description: 'd', config_type: 'payload' }, 2, REVISION)]);
    });

    it('given an item, when values equal to its own are sent (scalars, objects, its name), then they are left out, and nothing is recorded if nothing is left', () => {
      given(...live).when(edit({ config_type: 'task', content: { parameters: { region: 'eu' } }, name: 'settings' })).then([]);
      given(...live).when(edit({ config_type: 'task', name: 'renamed' })).then([itemUpdated({ name: 'renamed' }, 1, null)]);
      given(...live).when(edit({})).then([]);
    });

    it('given an item, when only its access changes, then ItemAccessChanged; the same access records nothing', () => {
      given(...live).when(update(USER, {}, other)).then([{ type: 'ItemAccessChanged', data: { access: other } }]);
      given(...live).when(update(USER, {}, { ...access })).then([]);
    });

    it('given an item, when fields and access change at once, then the field change comes first, then the access change', () => {
      given(...live)
        .when(update(USER, { description: 'd' }, other))
        .then([itemUpdated({ description: 'd' }, 1, null), { type: 'ItemAccessChanged', data: { access: other } }]);
    });

    it('given an item whose state is not among onlyIfStateIn, when updated, then nothing is recorded (even at another version)', () => {
      const task = created({ state: 'running' }, 'task');
      given(...task).when(edit({ state: 'success' }, { onlyIfStateIn: ['queued_in_redis'], expectedVersion: 9 })).then([]);
      given(...task)
        .when(edit({ state: 'success' }, { onlyIfStateIn: ['running'] }))
        .then([{ type: 'TaskSucceeded', data: { from: 'running', to: 'success', changes: { state: 'success' }, version: 1, revision_laui: null } }]);
    });

    it('given a task, when its state changes through the catalog, then the task aggregate\'s named event or its 409 (spec 3.1)', () => {
      const task = created({ state: 'scheduled' }, 'task');
      given(...task)
        .when(edit({ state: 'queued_for_connection' }))
        .then([{ type: 'TaskQueued', data: { from: 'scheduled', to: 'queued_for_connection', changes: { state: 'queued_for_connection' }, version: 1, revision_laui: null } }]);
      given(...task).when(edit({ state: 'running' })).thenFails(409, refusedTransitionDetail('scheduled', 'running'));
      given(...created({ state: 'running' }, 'task'))
        .when(edit({ state: 'scheduled' }, { trigger: 'dangerously_reset' }))
        .then([{ type: 'TaskReset', data: { from: 'running', to: 'scheduled', trigger: 'dangerously_reset', changes: { state: 'scheduled' }, version: 1, revision_laui: null } }]);
    });

    it('given a task, when only definition or runtime fields change, then an ItemUpdated (a versioned one steps the version)', () => {
      const task = created({ state: 'scheduled' }, 'task');
      given(...task).when(edit({ latest_heartbeat: AT })).then([itemUpdated({ latest_heartbeat: AT }, 1, null)]);
      given(...task).when(edit({ content: 'x' })).then([itemUpdated({ content: 'x' }, 2, REVISION)]);
    });
  });

  describe('steps of one commit (inSequence, as changeTask decides a run\'s steps)', () => {
    const steps = deciderSpecification(inSequence(itemDecider));

    it('given a queued task, when dispatch and pick-up are decided together, then each step is decided on the state the one before left', () => {
      steps(...created({ state: 'queued_for_connection' }, 'task'))
        .when([edit({ state: 'queued_in_redis', task_instance: 'd-1', session_id: 's-1' }), edit({ state: 'running' })])
        .then([
          {
            type: 'TaskDispatched',
            data: {
              from: 'queued_for_connection',
              to: 'queued_in_redis',
              changes: { state: 'queued_in_redis', task_instance: 'd-1', session_id: 's-1' },
              version: 1,
              revision_laui: null,
              execution_id: 'd-1',
              session_id: 's-1',
            },
          },
          { type: 'TaskStarted', data: { from: 'queued_in_redis', to: 'running', changes: { state: 'running' }, version: 1, revision_laui: null } },
        ]);
    });

    it('given a queued task, when a later step is refused by the state table, then the whole decision is refused', () => {
      steps(...created({ state: 'queued_for_connection' }, 'task'))
        .when([edit({ state: 'queued_in_redis' }), edit({ state: 'success' })])
        .thenFails(409, refusedTransitionDetail('queued_in_redis', 'success'));
    });
  });

  describe('delete and restore', () => {
    const softDelete = { kind: 'soft-delete', actor: USER, laui: LAUI, at: AT } as const;
    const hardDelete = { kind: 'hard-delete', actor: USER, laui: LAUI, at: AT } as const;
    const restore = { kind: 'restore', actor: USER, laui: LAUI, at: AT } as const;

    it('given a live item, when soft-deleted, then ItemSoftDeleted; a deleted one again records nothing', () => {
      given(...live).when(softDelete).then([deleted]);
      given(...live, deleted).when(softDelete).then([]);
    });

    it('given a live or deleted item, when hard-deleted, then ItemHardDeleted', () => {
      given(...live).when(hardDelete).then([hardDeleted]);
      given(...live, deleted).when(hardDelete).then([hardDeleted]);
    });

    it('given a deleted item, when restored, then ItemRestored; a live one records nothing', () => {
      given(...live, deleted).when(restore).then([restored]);
      given(...live).when(restore).then([]);
    });

    it('given no item or a hard-deleted one, when deleted (soft or hard) or restored, then 404 with its laui', () => {
      for (const command of [softDelete, hardDelete, restore]) {
        given().when(command).thenFails(404, NOT_FOUND);
        given(...live, hardDeleted).when(command).thenFails(404, NOT_FOUND);
      }
    });
  });

  describe('evolve', () => {
    it('given ItemCreated, when folded, then the item is live with its type, name, parent, fields, access and version', () => {
      expect(fold()).to.deep.equal({ status: 'none' });
      expect(fold(...live)).to.deep.equal({ status: 'live', laui: LAUI, itemType: 'config', name: 'settings', parentLaui: null, fields: NORMAL, access, version: 1 });
    });

    it('given changes, when folded, then a name change sets the name (not a field), others merge into the fields, the version follows', () => {
      const state = fold(...live, itemUpdated({ name: 'renamed', description: 'd' }, 2, REVISION));
      expect(state).to.deep.include({ name: 'renamed', version: 2, fields: { ...NORMAL, description: 'd' } });
    });

    it('given access, delete, restore and hard-delete events, when folded, then access and status follow them', () => {
      expect(fold(...live, { type: 'ItemAccessChanged', data: { access: other } })).to.deep.include({ status: 'live', access: other });
      expect(fold(...live, deleted)).to.deep.include({ status: 'deleted' });
      expect(fold(...live, deleted, restored)).to.deep.include({ status: 'live' });
      expect(fold(...live, deleted, hardDeleted)).to.deep.include({ status: 'hard_deleted' });
    });

    it('given events before any ItemCreated, when folded, then they are ignored', () => {
      expect(fold(itemUpdated({ name: 'x' }, 2, null), deleted, hardDeleted)).to.deep.equal({ status: 'none' });
    });
  });
});
