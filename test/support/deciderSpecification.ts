import { expect } from 'chai';
import { AppError } from '../../shared/errors.ts';
import type { DomainEvent } from '../../shared/events.ts';
import type { Decider } from '../../command-side/kernel/Decider.ts';

/**
 * given(events).when(command).then(events) | thenFails(status, detail): the decider test form of
 * DESIGN §7 (after emmett's DeciderSpecification), shared by every aggregate's unit spec.
 */
export const deciderSpecification =
  <State, Command, Event extends DomainEvent>(decider: Decider<State, Command, Event>) =>
  (...events: Event[]) => {
    const state: State = events.reduce(decider.evolve, decider.initialState());
    return {
      when: (command: Command) => ({
        then: (expected: Event[]) => expect(decider.decide(command, state)).to.deep.equal(expected),
        thenFails: (status: number, detail: unknown) => {
          try {
            decider.decide(command, state);
          } catch (error) {
            expect(error).to.be.instanceOf(AppError);
            expect((error as AppError).status).to.equal(status);
            expect((error as AppError).detail).to.deep.equal(detail);
            return;
          }
          expect.fail('the command was accepted');
        },
      }),
    };
  };
