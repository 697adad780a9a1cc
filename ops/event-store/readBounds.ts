import {
  START,
  type Position,
  type ReadAllOptions,
  type ReadStreamOptions,
} from '../../shared/event-store/EventStore.ts';

export const DEFAULT_READ_ALL_PAGE = 1000;

/*
 * Defaults and clamps of the read options, shared so that adapters agree on odd inputs
 * (a negative count or revision) instead of each store answering differently.
 */

export function readAllBounds(options: ReadAllOptions): { after: Position; maxCount: number } {
  const after = options.after ?? START;
  return {
    after: after < START ? START : after,
    maxCount: Math.max(0, Math.floor(options.maxCount ?? DEFAULT_READ_ALL_PAGE)),
  };
}

/** Inclusive revision range; `to` below `from` means an empty read. */
export function readStreamBounds(options: ReadStreamOptions): { from: number; to: number } {
  return {
    from: Math.max(0, options.fromRevision ?? 0),
    to: options.toRevision ?? Number.MAX_SAFE_INTEGER,
  };
}
