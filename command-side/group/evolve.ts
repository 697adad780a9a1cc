import { assertNever } from '../../shared/assertNever.ts';
import { emptyAccess } from './access.ts';
import type { GroupState } from './group.ts';
import type { GroupEvent } from '../../shared/domain-events/groupEvents.ts';

export const initialGroupState = (): GroupState => ({ status: 'absent' });

export const evolveGroup = (state: GroupState, event: GroupEvent): GroupState => {
  switch (event.type) {
    case 'GroupCreated':
      return { status: 'active', laui: event.data.laui, name: event.data.name, description: event.data.description, access: emptyAccess() };
    case 'GroupDescriptionChanged':
      return state.status === 'active' ? { ...state, description: event.data.description } : state;
    case 'GroupAccessGranted': {
      if (state.status !== 'active') return state;
      const { role, principal_laui } = event.data;
      return { ...state, access: { ...state.access, [role]: { ...state.access[role], [principal_laui]: 'true' } } };
    }
    case 'GroupAccessRevoked': {
      if (state.status !== 'active') return state;
      const { role, principal_laui } = event.data;
      const { [principal_laui]: _removed, ...rest } = state.access[role];
      return { ...state, access: { ...state.access, [role]: rest } };
    }
    case 'GroupDeleted':
      return { status: 'deleted', laui: event.data.laui, name: event.data.name };
    default:
      return assertNever(event);
  }
};
