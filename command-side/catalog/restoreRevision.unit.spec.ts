import { deciderSpecification } from '../../test/support/deciderSpecification.ts';
import type { ItemEvent } from '../../shared/domain-events/itemEvents.ts';
import type { AccessMaps } from '../../shared/access/permissions.ts';
import { itemDecider } from './decide.ts';
import type { ItemActor, ItemCommand } from './item.ts';

const USER: ItemActor = { isAdmin: false };
const ADMIN: ItemActor = { isAdmin: true };
const LAUI = '65a0000000000000000000c1';
const V1 = '65a0000000000000000000d1';
const V2 = '65a0000000000000000000d2';
const NEW = '65a0000000000000000000d9';
const access: AccessMaps = { owners: { '65a000000000000000000001': 'true' }, editors: {}, viewers: {} };

const createdPayload = (content: unknown, itemType = 'payload', fields: Record<string, unknown> = {}): ItemEvent => ({
  type: 'ItemCreated',
  data: { laui: LAUI, item_type: itemType, name: 'p', parent_laui: null, parent_type: null, link_laui: null, is_root: true, fields: { content, ...fields }, access, version: 1, revision_laui: V1 },
});
const edited = (content: unknown, version: number, revision: string): ItemEvent => ({ type: 'ItemUpdated', data: { changes: { content }, version, revision_laui: revision } });
const restore = (content: Record<string, unknown>, expectedVersion: number, actor: ItemActor = USER): ItemCommand => ({
  kind: 'restore-revision',
  actor,
  laui: LAUI,
  restored: { revisionLaui: V1, version: 1, content },
  expectedVersion,
  revisionLaui: NEW,
});

describe('catalog decider: restore a revision (issue 36)', () => {
  const given = deciderSpecification(itemDecider);

  it('given an item edited once, when its first revision is restored at the current version, then ItemRevisionRestored with the changed fields, a new version and the revision named', () => {
    given(createdPayload({ n: 1 }), edited({ n: 2 }, 2, V2))
      .when(restore({ content: { n: 1 } }, 2))
      .then([{ type: 'ItemRevisionRestored', data: { changes: { content: { n: 1 } }, version: 3, revision_laui: NEW, restored_revision_laui: V1, restored_version: 1 } }]);
  });

  it('given an item whose content already is the revision\'s, when it is restored, then still a new revision (history records the restore) with no changed field', () => {
    given(createdPayload({ n: 1 }), edited({ n: 2 }, 2, V2), edited({ n: 1 }, 3, '65a0000000000000000000d3'))
      .when(restore({ content: { n: 1 } }, 3))
      .then([{ type: 'ItemRevisionRestored', data: { changes: {}, version: 4, revision_laui: NEW, restored_revision_laui: V1, restored_version: 1 } }]);
  });

  it('given an item edited since the caller read it, when restored with the older expected_version, then 409 with the version conflict', () => {
    given(createdPayload({ n: 1 }), edited({ n: 2 }, 2, V2))
      .when(restore({ content: { n: 1 } }, 1))
      .thenFails(409, 'Item version conflict: expected version 1, current version 2');
  });

  it('given no item, a hard-deleted one or a soft-deleted one, when restored, then 404, 404 and 400', () => {
    given().when(restore({ content: { n: 1 } }, 1)).thenFails(404, `Item not found with laui: ${LAUI}`);
    given(createdPayload({ n: 1 }), { type: 'ItemHardDeleted', data: { at: '2026-01-01T00:00:00.000Z' } })
      .when(restore({ content: { n: 1 } }, 1))
      .thenFails(404, `Item not found with laui: ${LAUI}`);
    given(createdPayload({ n: 1 }), { type: 'ItemSoftDeleted', data: { at: '2026-01-01T00:00:00.000Z' } })
      .when(restore({ content: { n: 1 } }, 1))
      .thenFails(400, 'Invalid argument: the item is deleted; restore it before updating');
  });

  it('given a system config, when a non-admin restores a revision, then 403; an administrator\'s restore is decided', () => {
    const system = createdPayload({ a: 1 }, 'config', { config_type: 'system' });
    given(system, edited({ a: 2 }, 2, V2)).when(restore({ config_type: 'system', content: { a: 1 } }, 2)).thenFails(403, 'Access denied');
    given(system, edited({ a: 2 }, 2, V2))
      .when(restore({ config_type: 'system', content: { a: 1 } }, 2, ADMIN))
      .then([{ type: 'ItemRevisionRestored', data: { changes: { content: { a: 1 } }, version: 3, revision_laui: NEW, restored_revision_laui: V1, restored_version: 1 } }]);
  });

  it('given a scheduled task, when a revision without dates is restored, then 422 as for an update', () => {
    const task = createdPayload(null, 'task', { frequency: 'ADHOC', start_date: null, end_date: null });
    const scheduled: ItemEvent = { type: 'ItemUpdated', data: { changes: { frequency: '0 0 * * *', start_date: '2026-01-01T00:00:00Z', end_date: '2027-01-01T00:00:00Z' }, version: 2, revision_laui: V2 } };
    given(task, scheduled).when(restore({ frequency: '0 0 * * *', start_date: null, end_date: null }, 2)).thenFails(422, 'start_date and end_date required for scheduled tasks');
  });
});
