import { expect } from 'chai';
import { deciderSpecification } from '../../test/support/deciderSpecification.ts';
import type { ItemEvent } from '../../shared/domain-events/itemEvents.ts';
import type { AccessMaps } from '../../shared/access/permissions.ts';
import { itemDecider } from './decide.ts';
import { SERVICE_ACTOR, type ItemActor, type ItemCommand } from './item.ts';

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
