import type { DomainEvent } from '../../shared/events.ts';

/**
 * An aggregate's pure logic: fold events into state, decide events from a command and state.
 * No I/O, no clock, no ids: those arrive on the command.
 */
export interface Decider<State, Command, Event extends DomainEvent> {
  initialState(): State;
  evolve(state: State, event: Event): State;
  /** Returns the new events, or throws an AppError that the facade renders. */
  decide(command: Command, state: State): Event[];
}
