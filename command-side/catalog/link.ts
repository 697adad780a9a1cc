import type { Laui } from '../../shared/ids.ts';
import type { Decider } from '../kernel/Decider.ts';
import type { LinkEvent } from '../../shared/domain-events/linkEvents.ts';

type LinkState = { status: 'none' | 'live' | 'removed' };

type LinkCommand =
  | { kind: 'create'; data: Extract<LinkEvent, { type: 'LinkCreated' }>['data'] }
  | { kind: 'remove'; at: string };

export const linkDecider: Decider<LinkState, LinkCommand, LinkEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (_state, event) => ({ status: event.type === 'LinkCreated' ? 'live' : 'removed' }),
  decide: (command, state) => {
    if (command.kind === 'create') return state.status === 'none' ? [{ type: 'LinkCreated', data: command.data }] : [];
    return state.status === 'live' ? [{ type: 'LinkRemoved', data: { at: command.at } }] : [];
  },
};

export const linkStream = (laui: Laui): string => `link-${laui}`;
export const linkKey = (parentLaui: Laui, childLaui: Laui): string => `link:${parentLaui}:${childLaui}`;
