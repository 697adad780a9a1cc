import { assertNever } from '../../shared/assertNever.ts';
import { conflict, forbidden, notFound, unprocessable } from '../../shared/errors.ts';
import type { Decider } from '../kernel/Decider.ts';
import { diffAccess, emptyAccess, grantsOf, holdsAnyRole, type AccessMaps, type Grant } from './access.ts';
import { applyAccessPatch, patchTouches, type AccessPatch } from './applyAccessPatch.ts';
import { evolveGroup, initialGroupState } from './evolve.ts';
import type { GroupActor, GroupCommand, GroupState } from './group.ts';
import type { GroupEvent } from '../../shared/domain-events/groupEvents.ts';

export const GROUP_NOT_FOUND = 'Group not found';
export const LAST_OWNER_DETAIL = 'Invalid access_patch: a group must keep at least one owner';

const granted = ({ role, principal_laui }: Grant): GroupEvent => ({ type: 'GroupAccessGranted', data: { role, principal_laui } });
const revoked = ({ role, principal_laui }: Grant): GroupEvent => ({ type: 'GroupAccessRevoked', data: { role, principal_laui } });

/** A patch may change anything but never leave the group without an owner: nobody could manage it. */
const patched = (access: AccessMaps, patch: AccessPatch | undefined): AccessMaps => {
  const next = applyAccessPatch(access, patch);
  if (Object.keys(next.owners).length === 0) throw unprocessable(LAST_OWNER_DETAIL);
  return next;
};

const can = (actor: GroupActor, access: AccessMaps, roles: Parameters<typeof holdsAnyRole>[2]): boolean =>
  actor.isAdmin || holdsAnyRole(access, actor.principals, roles);

export const decideGroup = (command: GroupCommand, state: GroupState): GroupEvent[] => {
  switch (command.kind) {
    case 'create': {
      // The handler reserves the name first; a second creation on one stream is a bug, not a race.
      if (state.status !== 'absent') throw conflict('Group already exists');
      const access = patched({ ...emptyAccess(), owners: { [command.creator]: 'true' } }, command.patch);
      return [
        { type: 'GroupCreated', data: { laui: command.laui, name: command.name, description: command.description } },
        ...grantsOf(access).map(granted),
      ];
    }
    case 'update': {
      if (state.status !== 'active') throw notFound(GROUP_NOT_FOUND);
      if (!can(command.actor, state.access, ['owners', 'editors'])) throw forbidden();
      // Editors manage description, editors and viewers; only owners decide who owns.
      if (patchTouches(command.patch, 'owners') && !can(command.actor, state.access, ['owners'])) throw forbidden();
      const changes = diffAccess(state.access, patched(state.access, command.patch));
      const description: GroupEvent[] =
        command.description !== undefined && command.description !== state.description
          ? [{ type: 'GroupDescriptionChanged', data: { description: command.description } }]
          : [];
      return [...description, ...changes.revoked.map(revoked), ...changes.granted.map(granted)];
    }
    case 'delete':
      if (state.status !== 'active') throw notFound(GROUP_NOT_FOUND);
      if (!can(command.actor, state.access, ['owners'])) throw forbidden();
      return [...grantsOf(state.access).map(revoked), { type: 'GroupDeleted', data: { laui: state.laui, name: state.name } }];
    default:
      return assertNever(command);
  }
};

export const groupDecider: Decider<GroupState, GroupCommand, GroupEvent> = {
  initialState: initialGroupState,
  evolve: evolveGroup,
  decide: decideGroup,
};
