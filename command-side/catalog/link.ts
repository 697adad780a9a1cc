import type { DomainEvent } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Decider } from '../kernel/Decider.ts';

/**
 * A link between two items, stream `link-<laui>`. A true-parent link means containment and access
 * inheritance (the child's parent_laui); any other link is a soft reference. The pair is unique
 * (reservation `link:<parent>:<child>`), so linking twice returns the first link.
 */
export type LinkEvent =
  | DomainEvent<
      'LinkCreated',
      { link_laui: Laui; parent_laui: Laui; child_laui: Laui; parent_type: string; child_type: string; true_parent: boolean }
    >
  | DomainEvent<'LinkRemoved', { at: string }>;

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
