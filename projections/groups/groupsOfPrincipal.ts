import type { Laui } from '../../shared/ids.ts';
import type { ReadStore } from '../../shared/read-store/ReadStore.ts';
import { GROUP_MEMBERS, groupMembersProjection, type GroupMemberDoc } from './groupMembersProjection.ts';

/** Groups nest (a group may be a member of another); chains longer than this are not followed. */
export const MAX_GROUP_NESTING = 10;

/**
 * Every group the principal (a user or a group) belongs to in any role, directly or through
 * nested groups: G counts when the principal, or a group it belongs to, holds a role in G.
 * Breadth first over the membership index, at most MAX_GROUP_NESTING levels; cycles stop at
 * groups already found, and the principal itself is never in the answer.
 */
export const groupsOfPrincipal = async (readStore: ReadStore, principalLaui: Laui): Promise<Set<Laui>> => {
  const members = readStore.collection<GroupMemberDoc>(GROUP_MEMBERS, groupMembersProjection.indexes);
  const found = new Set<Laui>();
  let frontier: Laui[] = [principalLaui];
  for (let depth = 0; depth < MAX_GROUP_NESTING && frontier.length > 0; depth += 1) {
    const next: Laui[] = [];
    for (const member of frontier) {
      for (const { group_laui } of await members.find({ where: { member_laui: member } })) {
        if (group_laui === principalLaui || found.has(group_laui)) continue;
        found.add(group_laui);
        next.push(group_laui);
      }
    }
    frontier = next;
  }
  return found;
};
