import type { Laui } from '../../shared/ids.ts';
import type { Decider } from '../kernel/Decider.ts';
import type { SessionEvent } from '../../shared/domain-events/authEvents.ts';

export interface SessionState {
  ended: boolean;
}

export interface EndSession {
  kind: 'end';
  sessionId: string;
  userLaui: Laui | null;
  reason: string;
}

export const sessionStream = (sessionId: string): string => `session-${sessionId}`;

/** 128 random bits in hex: what login puts in its tokens as `sid`. */
export const SESSION_ID_PATTERN = /^[0-9a-f]{32}$/;

export const sessionDecider: Decider<SessionState, EndSession, SessionEvent> = {
  initialState: () => ({ ended: false }),
  evolve: () => ({ ended: true }),
  // Ending twice (two logouts racing, a second device) records nothing new.
  decide: (command, state) =>
    state.ended ? [] : [{ type: 'SessionEnded', data: { session_id: command.sessionId, user_laui: command.userLaui, reason: command.reason } }],
};
