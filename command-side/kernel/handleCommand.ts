import type { DomainEvent, EventMetadata } from '../../shared/events.ts';
import { WrongExpectedVersionError, type AppendResult, type EventStore, type Position } from '../../shared/event-store/EventStore.ts';
import type { Decider } from './Decider.ts';
import { commit } from './commit.ts';
import { retryOnConflict, SPEC_RETRY, type Attempt, type RetryPolicy } from './retryOnConflict.ts';

export interface CommandResult<State, Event> {
  events: Event[];
  state: State;
  /** Position of the last event written, or null when the command decided nothing. */
  position: Position | null;
}

/**
 * Folded state of hot streams kept between commands, so a command reads only the events appended
 * since (a busy connection queue or a task that runs daily grows for ever). Sound because events are
 * immutable and states are never mutated in place: a cached entry is exactly the fold up to its revision.
 */
export interface StateCache<State> {
  get(streamId: string): { revision: number; state: State } | undefined;
  set(streamId: string, entry: { revision: number; state: State }): void;
}

/** A bounded cache: the least recently used stream leaves first. */
export const lruStateCache = <State>(capacity = 10_000): StateCache<State> => {
  const entries = new Map<string, { revision: number; state: State }>();
  return {
    get(streamId) {
      const entry = entries.get(streamId);
      if (entry) {
        entries.delete(streamId);
        entries.set(streamId, entry);
      }
      return entry;
    },
    set(streamId, entry) {
      entries.delete(streamId);
      entries.set(streamId, entry);
      if (entries.size > capacity) entries.delete(entries.keys().next().value as string);
    },
  };
};

/**
 * One attempt's decision. A stream in `cache` is not read (unless `fresh`): the decision is made on
 * the cached state and the append's expected revision is what checks it (a read per command was
 * ~3% of the event loop under task load, and most of them found nothing new). Only a decision that
 * would be answered without an append, nothing to write or a refusal, is made again on a fresh
 * read, since no append will check the state it was made on. `guessed`: the decision stands on the
 * cache, so a conflict on its append means a stale cache (another handler or process wrote the
 * stream), not contention.
 */
export const decideOnCache = async <State, Command, Event extends DomainEvent>(
  eventStore: EventStore,
  streamId: string,
  decider: Decider<State, Command, Event>,
  command: Command,
  cache: StateCache<State> | undefined,
  fresh: boolean,
): Promise<{ loaded: { state: State; revision: number | undefined }; events: Event[]; guessed: boolean }> => {
  const cached = fresh ? undefined : cache?.get(streamId);
  if (cached) {
    try {
      const events = decider.decide(command, cached.state);
      if (events.length > 0) return { loaded: cached, events, guessed: true };
    } catch {
      // A refusal on a guess is decided again on the stream as it is.
    }
  }
  const loaded = await loadRevision(eventStore, streamId, decider, cache);
  return { loaded, events: decider.decide(command, loaded.state), guessed: false };
};

/** A command on one stream, as handleCommand takes it. */
export interface CommandOptions<State, Command, Event extends DomainEvent> {
  eventStore: EventStore;
  streamId: string;
  decider: Decider<State, Command, Event>;
  command: Command;
  /** The events' metadata; per event (by index in the decision) when one decision serves several callers. */
  metadata: EventMetadata | ((eventIndex: number) => EventMetadata);
  /** The conflict policy for contention on the stream: the spec's (SPEC_RETRY) unless said. */
  retry?: RetryPolicy;
  /** Folded states of hot streams: the stream is decided on its cached state without a read (decideOnCache). */
  cache?: StateCache<State>;
  /**
   * The stream as the caller already knows it (a stream it just read, or one that cannot exist yet:
   * a fresh LAUI), used for the first attempt instead of reading it again. A wrong guess costs
   * nothing but a retry: the append's expected revision still guards it.
   */
  known?: { state: State; revision: number | undefined };
}

/**
 * load -> decide -> append with the stream's revision as expected revision, under retryOnConflict:
 * when another writer got there first the command is decided again on fresh state (the decision may
 * change, e.g. a code redeemed twice); a conflict that persists past the policy becomes 503
 * write_conflict. The first attempt decides a cached stream without reading it (decideOnCache); a
 * conflict on that guess costs one immediate fresh attempt, outside the retry policy: it is not contention.
 */
export const handleCommand = async <State, Command, Event extends DomainEvent>({
  eventStore,
  streamId,
  decider,
  command,
  metadata,
  retry = SPEC_RETRY,
  cache,
  known,
}: CommandOptions<State, Command, Event>): Promise<CommandResult<State, Event>> =>
  retryOnConflict(retry, async (fresh): Promise<Attempt<CommandResult<State, Event>>> => {
    const { loaded, events, guessed } =
      known && !fresh
        ? { loaded: known, events: decider.decide(command, known.state), guessed: false }
        : await decideOnCache(eventStore, streamId, decider, command, cache, fresh);
    let state = loaded.state;
    if (events.length === 0) return { done: { events, state, position: null } };
    const append = {
      streamId,
      events: events.map((event, index) => ({ type: event.type, data: event.data, metadata: typeof metadata === 'function' ? metadata(index) : metadata })),
      expected: loaded.revision ?? ('no_stream' as const),
    };
    let result: AppendResult;
    try {
      result = (await commit(eventStore, append, [])).main as AppendResult;
    } catch (error) {
      if (!(error instanceof WrongExpectedVersionError)) throw error;
      return { conflict: guessed ? 'guessed' : 'contended' };
    }
    for (const event of events) state = decider.evolve(state, event);
    cache?.set(streamId, { revision: result.nextExpectedRevision, state });
    return { done: { events, state, position: result.position } };
  });

/**
 * Several commands decided in order on one stream and appended together: one commit, one fsync,
 * and the later commands see the events of the earlier ones.
 */
export const inSequence = <State, Command, Event extends DomainEvent>(decider: Decider<State, Command, Event>): Decider<State, Command[], Event> => ({
  initialState: decider.initialState,
  evolve: decider.evolve,
  decide: (commands, state) => {
    const events: Event[] = [];
    let current = state;
    for (const command of commands) {
      for (const event of decider.decide(command, current)) {
        events.push(event);
        current = decider.evolve(current, event);
      }
    }
    return events;
  },
});

/**
 * Folds a stream (from the cache's revision when there is one) and returns the state with the
 * revision of its last event, undefined for a stream that does not exist.
 */
export const loadRevision = async <State, Event extends DomainEvent>(
  eventStore: EventStore,
  streamId: string,
  decider: Pick<Decider<State, unknown, Event>, 'initialState' | 'evolve'>,
  cache?: StateCache<State>,
): Promise<{ state: State; revision: number | undefined }> => {
  const cached = cache?.get(streamId);
  const recorded = await eventStore.readStream(streamId, cached ? { fromRevision: cached.revision + 1 } : undefined);
  let state = cached ? cached.state : decider.initialState();
  for (const event of recorded) state = decider.evolve(state, { type: event.type, data: event.data } as Event);
  const revision = recorded.at(-1)?.revision ?? cached?.revision;
  if (cache && revision !== undefined) cache.set(streamId, { revision, state });
  return { state, revision };
};

/** A stream that does not exist yet (a fresh LAUI): its first command needs no read. */
export const newStream = <State>(decider: Pick<Decider<State, unknown, DomainEvent>, 'initialState'>): { state: State; revision: undefined } => ({
  state: decider.initialState(),
  revision: undefined,
});

/** Folds a stream without deciding: the current state of an aggregate for a query or a check. */
export const loadState = async <State, Event extends DomainEvent>(
  eventStore: EventStore,
  streamId: string,
  decider: Pick<Decider<State, unknown, Event>, 'initialState' | 'evolve'>,
): Promise<State> => (await loadRevision(eventStore, streamId, decider)).state;
