import Router from '@koa/router';
import { notFound } from '../../shared/errors.ts';
import { principalOf, type AppState } from '../../shared/http/AppState.ts';
import { isLaui, type Laui } from '../../shared/ids.ts';
import type { ReadStore } from '../../shared/read-store/ReadStore.ts';
import { validateRequest } from '../../shared/validation/validateRequest.ts';
import type { Role } from '../../shared/access/permissions.ts';
import { GROUP_MEMBERS, groupMembersProjection, type GroupMemberDoc } from '../../projections/groups/groupMembersProjection.ts';
import { GROUPS, groupsProjection, type GroupDoc } from '../../projections/groups/groupsProjection.ts';
import { groupsOfPrincipal } from '../../projections/groups/groupsOfPrincipal.ts';

export const RELATIONS = ['owners', 'editors', 'viewers', 'false_parents', 'true_parent', '', 'all'] as const;
export type Relation = (typeof RELATIONS)[number];

export const relationQuerySchema = {
  type: 'object',
  properties: { relation: { type: 'string', enum: [...RELATIONS] } },
  required: ['relation'],
};

/** The group resource of spec 2.7. */
export const groupView = (doc: GroupDoc) => ({
  laui: doc.laui,
  name: doc.name,
  description: doc.description,
  access: doc.access,
  created_at: doc.created_at,
  updated_at: doc.updated_at,
});

/**
 * Private group reads (spec 4.6), each of the caller's own groups only (an administrator may read
 * any by its LAUI). A caller holds a role in a group directly or through a group it belongs to (see
 * groupsOfPrincipal). `true_parent`: groups the caller owns; `false_parents`:
 * groups where it edits or views but does not own; `all` and the empty string: any role.
 */
export const groupQueryRoutes = ({ readStore }: { readStore: ReadStore }): Router<AppState> => {
  const router = new Router<AppState>();
  const groups = readStore.collection<GroupDoc>(GROUPS, groupsProjection.indexes);
  const members = readStore.collection<GroupMemberDoc>(GROUP_MEMBERS, groupMembersProjection.indexes);

  /** Groups in which any of `principals` holds `role`. */
  const holding = async (principals: ReadonlyArray<Laui>, role: Role): Promise<Set<Laui>> => {
    const found = new Set<Laui>();
    for (const member_laui of principals) {
      for (const doc of await members.find({ where: { member_laui, role } })) found.add(doc.group_laui);
    }
    return found;
  };

  const groupsFor = async (principals: ReadonlyArray<Laui>, relation: Relation): Promise<Set<Laui>> => {
    switch (relation) {
      case 'owners':
      case 'true_parent':
        return holding(principals, 'owners');
      case 'editors':
      case 'viewers':
        return holding(principals, relation);
      case 'false_parents': {
        const owned = await holding(principals, 'owners');
        const other = new Set([...(await holding(principals, 'editors')), ...(await holding(principals, 'viewers'))]);
        return new Set([...other].filter((laui) => !owned.has(laui)));
      }
      case '':
      case 'all':
        return new Set([
          ...(await holding(principals, 'owners')),
          ...(await holding(principals, 'editors')),
          ...(await holding(principals, 'viewers')),
        ]);
      default:
        throw new Error(`Unhandled relation: ${String(relation satisfies never)}`);
    }
  };

  router.get('/api/v1/group/get', async (ctx) => {
    const { relation } = validateRequest<{ relation: Relation }>(relationQuerySchema, { ...ctx.query }, 'query');
    const caller = principalOf(ctx).laui;
    const principals = [caller, ...(await groupsOfPrincipal(readStore, caller))];
    const docs = await Promise.all([...(await groupsFor(principals, relation))].map((laui) => groups.get(laui)));
    ctx.body = docs
      .filter((doc): doc is GroupDoc => doc !== null)
      .sort((a, b) => a.name_key.localeCompare(b.name_key) || a.laui.localeCompare(b.laui))
      .map(groupView);
  });

  /**
   * A group by its LAUI, for its members (any role, directly or through a group that is one) and
   * administrators. Anyone else gets the 404 of an unknown group (the spec lists no 403 here): a
   * group's name, description and member list are its members' business, and a 403 would still
   * confirm that the LAUI names a group.
   */
  router.get('/api/v1/group/get/:group_laui', async (ctx) => {
    const caller = principalOf(ctx);
    const laui = ctx.params.group_laui ?? '';
    const doc = isLaui(laui) ? await groups.get(laui) : null;
    if (!doc || !(caller.isAdmin || (await groupsOfPrincipal(readStore, caller.laui)).has(doc.laui))) throw notFound('Group not found');
    ctx.body = groupView(doc);
  });

  return router;
};
