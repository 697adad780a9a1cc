import type { DomainEvent } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Decider } from '../kernel/Decider.ts';

/**
 * A login session, stream `session-<sid>`. The sid is put in the session cookie, in the codes
 * issued in the session and in the access and refresh tokens those codes are exchanged for; logout
 * ends the session and with it every one of them. Only the end is recorded: a login appends
 * nothing, so sessions cost the log nothing until they are ended.
 */
export type SessionEvent = DomainEvent<'SessionEnded', { session_id: string; user_laui: Laui | null; reason: string }>;

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
