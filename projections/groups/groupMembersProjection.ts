import type { RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Role } from '../../shared/access/permissions.ts';
import type { GroupEvent } from '../../shared/domain-events/groupEvents.ts';
import type { Projection } from '../runner/Projection.ts';
import { groupLauiOf } from './groupsProjection.ts';

/**
 * One document per (group, role, member principal): "which groups does U belong to" is an
 * indexed lookup on `member_laui`, whatever the number of groups. The member is a user or a group.
 */
export interface GroupMemberDoc {
  [field: string]: unknown;
  id: string;
  group_laui: Laui;
  role: Role;
  member_laui: Laui;
}

export const GROUP_MEMBERS = 'group_members';

type GrantEvent = Extract<GroupEvent, { type: 'GroupAccessGranted' | 'GroupAccessRevoked' }>;

/** The membership an access event is about, or null for an event outside a group stream. */
const membershipOf = (event: RecordedEvent): GroupMemberDoc | null => {
  const group_laui = groupLauiOf(event);
  if (group_laui === null) return null;
  const { role, principal_laui } = (event as unknown as GrantEvent).data;
  return { id: `${group_laui}:${role}:${principal_laui}`, group_laui, role, member_laui: principal_laui };
};

export const groupMembersProjection: Projection<GroupMemberDoc> = {
  name: 'group_members',
  collection: GROUP_MEMBERS,
  indexes: [{ fields: ['member_laui'] }, { fields: ['member_laui', 'role'] }, { fields: ['group_laui'] }],
  // GroupDeleted is not needed: the decider revokes every grant in the deleting commit.
  handles: new Set<GroupEvent['type']>(['GroupAccessGranted', 'GroupAccessRevoked']),
  documentId: (event) => membershipOf(event)?.id ?? null,
  evolve: (_doc, event) => (event.type === 'GroupAccessRevoked' ? null : membershipOf(event)),
};
