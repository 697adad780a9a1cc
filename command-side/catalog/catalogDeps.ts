import type { Clock } from '../../shared/clock.ts';
import type { EventStore } from '../../shared/event-store/EventStore.ts';
import type { SecretBox } from '../../shared/ports/SecretBox.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import type { AccessControl } from '../../projections/catalog/accessControl.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { LinkDoc } from '../../shared/read-models/LinkDoc.ts';

/** Ports every catalog command needs. */
export interface CatalogDeps {
  eventStore: EventStore;
  items: Collection<ItemDoc>;
  links: Collection<LinkDoc>;
  access: AccessControl;
  clock: Clock;
  secrets: SecretBox;
}

/** Keys of a create or update body that are not type fields: the service owns or derives them. */
export const RESERVED_KEYS: ReadonlySet<string> = new Set([
  'id',
  'laui',
  'item_laui',
  'item_type',
  'name',
  'parent_laui',
  'is_root',
  'access_patch',
  'access',
  'expected_version',
  'created_at',
  'updated_at',
  'deleted_at',
  'is_deleted',
  'created_by',
  'updated_by',
  'version',
  'pk',
  '_position',
  // Whose rights a task's run acts with: written by the run pipeline only (checkTaskReferences.ts).
  'run_by',
]);

export const typeFields = (body: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(body).filter(([key]) => !RESERVED_KEYS.has(key)));
