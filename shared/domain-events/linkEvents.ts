import type { DomainEvent } from '../events.ts';
import type { Laui } from '../ids.ts';

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
