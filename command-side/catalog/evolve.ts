import { assertNever } from '../../shared/assertNever.ts';
import { isItemChange, type ItemState } from './item.ts';
import type { ItemEvent } from '../../shared/domain-events/itemEvents.ts';

export const initialItemState = (): ItemState => ({ status: 'none' });

export const evolveItem = (state: ItemState, event: ItemEvent): ItemState => {
  if (event.type === 'ItemCreated') {
    return {
      status: 'live',
      laui: event.data.laui,
      itemType: event.data.item_type,
      name: event.data.name,
      parentLaui: event.data.parent_laui,
      fields: event.data.fields,
      access: event.data.access,
      version: event.data.version,
    };
  }
  if (state.status === 'none') return state;
  // A field edit and a named task or cron change set fields alike.
  if (isItemChange(event)) {
    const { name, ...rest } = event.data.changes;
    return {
      ...state,
      name: typeof name === 'string' ? name : state.name,
      fields: { ...state.fields, ...rest },
      version: event.data.version,
    };
  }
  switch (event.type) {
    case 'ItemAccessChanged':
      return { ...state, access: event.data.access };
    case 'ItemSoftDeleted':
      return { ...state, status: 'deleted' };
    case 'ItemRestored':
      return { ...state, status: 'live' };
    case 'ItemHardDeleted':
      return { ...state, status: 'hard_deleted' };
    default:
      return assertNever(event);
  }
};
