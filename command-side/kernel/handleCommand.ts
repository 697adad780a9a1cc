import { writeConflict } from '../../shared/errors.ts';
import type { DomainEvent, EventMetadata } from '../../shared/events.ts';
import { WrongExpectedVersionError, type EventStore, type Position } from '../../shared/event-store/EventStore.ts';
import type { Decider } from './Decider.ts';

export interface CommandResult<State, Event> {
  events: Event[];
  state: State;
  /** Position of the last event written, or null when the command decided nothing. */
  position: Position | null;
}

export interface RetryPolicy {
  attempts: number;
  baseDelayMs: number;
}

/** The spec's rule for contended streams: 5 attempts, exponential backoff from 100 ms. */
export const SPEC_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 100 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * load -> decide -> append with the stream's revision as expected revision. When another writer
 * got there first the command is decided again on fresh state (the decision may change, e.g. a
 * code redeemed twice); a conflict that persists past the policy becomes 503 write_conflict.
 */
export const handleCommand = async <State, Command, Event extends DomainEvent>(
  eventStore: EventStore,
  streamId: string,
  decider: Decider<State, Command, Event>,
  command: Command,
  metadata: EventMetadata,
  retry: RetryPolicy = SPEC_RETRY,
): Promise<CommandResult<State, Event>> => {
  for (let attempt = 1; ; attempt += 1) {
    const recorded = await eventStore.readStream(streamId);
    let state = decider.initialState();
    for (const event of recorded) state = decider.evolve(state, { type: event.type, data: event.data } as Event);
    const events = decider.decide(command, state);
    if (events.length === 0) return { events, state, position: null };
    const last = recorded.at(-1);
    try {
      const result = await eventStore.append(
        streamId,
        events.map((event) => ({ type: event.type, data: event.data, metadata })),
        last ? last.revision : 'no_stream',
      );
      for (const event of events) state = decider.evolve(state, event);
      return { events, state, position: result.position };
    } catch (error) {
      if (!(error instanceof WrongExpectedVersionError)) throw error;
      if (attempt >= retry.attempts) throw writeConflict();
      await sleep(retry.baseDelayMs * 2 ** (attempt - 1) * Math.random());
    }
  }
};

/** Folds a stream without deciding: the current state of an aggregate for a query or a check. */
export const loadState = async <State, Event extends DomainEvent>(
  eventStore: EventStore,
  streamId: string,
  decider: Pick<Decider<State, unknown, Event>, 'initialState' | 'evolve'>,
): Promise<State> => {
  const recorded = await eventStore.readStream(streamId);
  return recorded.reduce((state, event) => decider.evolve(state, { type: event.type, data: event.data } as Event), decider.initialState());
};
