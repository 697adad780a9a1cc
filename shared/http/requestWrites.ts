import type { Clock } from '../clock.ts';
import type { Position } from '../event-store/EventStore.ts';
import { metadataFor, type EventMetadata } from '../events.ts';
import type { Laui } from '../ids.ts';
import type { ReadModelProgress } from '../read-store/ReadModelProgress.ts';
import { principalOf, type AppContext } from './AppState.ts';

export interface RequestWritesDeps {
  clock: Clock;
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
}

/** The two steps every command route shares around its command: stamp its events, then wait for them. */
export interface RequestWrites {
  /** Metadata for the events written on behalf of the authenticated caller (401 without one). */
  meta(ctx: AppContext): EventMetadata;
  /** The same for routes that run before authentication (login, tokens, logout): the user is named, or null. */
  metaFor(ctx: AppContext, userLaui: Laui | null): EventMetadata;
  /**
   * Read-your-writes: resolves once the read models applied `position`, or the bound passed (the
   * answer then goes out anyway: the write is in the log). Null, a command that wrote nothing, waits not.
   */
  settle(position: Position | null): Promise<void>;
  /**
   * settle, then one turn of the event loop, for the routes that dispatch runs: what the commit
   * released (the in-process worker's pick-up, up to the write of the run to its process) goes before
   * the answer. The answer's socket write wakes the client, and on a small machine it took the core
   * the run's start was waiting for: the run then started after the answer instead of beside it
   * (issue 34: a lone no-op run's end-to-end p50 7.1-8.7 -> 6.3-7.8 ms, the answer ~0.4 ms later).
   * The worker's path to its run is microtasks, which all run before setImmediate's callback.
   */
  settleRuns(position: Position | null): Promise<void>;
}

const nextTurn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * One helper for every route module, so each route reads parse -> command -> settle -> answer.
 * `deps` is read at each call, as the closures it replaces did.
 */
export const requestWrites = (deps: RequestWritesDeps): RequestWrites => {
  const metaFor = (ctx: AppContext, userLaui: Laui | null) => metadataFor(userLaui, deps.clock.now(), ctx.state.correlationId);
  return {
    meta: (ctx) => metaFor(ctx, principalOf(ctx).laui),
    metaFor,
    settle: async (position) => {
      if (position !== null) await deps.readModels.waitFor(position, deps.readYourWritesTimeoutMs);
    },
    settleRuns: async (position) => {
      if (position !== null) await deps.readModels.waitFor(position, deps.readYourWritesTimeoutMs);
      await nextTurn();
    },
  };
};
