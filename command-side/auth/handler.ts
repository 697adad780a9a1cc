import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { unauthorized } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { EventStore, Position } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Clock } from '../../shared/clock.ts';
import { handleCommand, loadState } from '../kernel/handleCommand.ts';
import { authorizationCodeDecider, INVALID_CODE } from './authorizationCodeDecider.ts';
import { refreshFamilyDecider, refreshTokenDecider } from './refreshTokenDecider.ts';
import { SESSION_ID_PATTERN, sessionDecider, sessionStream } from './sessionDecider.ts';

/** Codes live long enough for a browser redirect and a token call, no longer. */
export const AUTHORIZATION_CODE_TTL_MS = 5 * 60 * 1000;
export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 60 * 60 * 1000;

const digest = (secret: string): string => createHash('sha256').update(secret).digest('hex');
const codeStream = (code: string) => `authcode-${digest(code)}`;
const refreshStream = (token: string) => `refresh-${digest(token)}`;
const familyStream = (familyId: string) => `refreshfamily-${familyId}`;

export const REFRESH_TOKEN_PATTERN = /^[0-9a-f]{64}$/;

/** A new login session's id (the `sid` claim). */
export const newSessionId = (): string => randomBytes(16).toString('hex');

export const authHandler = ({ eventStore, clock }: { eventStore: EventStore; clock: Clock }) => {
  const at = () => clock.now().toISOString();

  const issueRefreshToken = async (userLaui: Laui, familyId: string, sessionId: string, metadata: EventMetadata): Promise<string> => {
    const token = randomBytes(32).toString('hex');
    const expiresAt = new Date(clock.now().getTime() + REFRESH_TOKEN_TTL_MS).toISOString();
    await handleCommand({ eventStore, streamId: refreshStream(token), decider: refreshTokenDecider, command: { kind: 'issue', userLaui, familyId, expiresAt, sessionId }, metadata });
    return token;
  };

  /** Read from the session's own stream, not a read model: a code or refresh token is never honoured after its logout. */
  const sessionEnded = async (sessionId: string | null): Promise<boolean> =>
    sessionId !== null && (await loadState(eventStore, sessionStream(sessionId), sessionDecider)).ended;

  return {
    /** A 128-bit hex code bound to the user and the login session it was issued in; only its hash is stored. */
    async issueCode(userLaui: Laui, clientId: string, sessionId: string, metadata: EventMetadata): Promise<string> {
      const code = randomBytes(16).toString('hex');
      const expiresAt = new Date(clock.now().getTime() + AUTHORIZATION_CODE_TTL_MS).toISOString();
      await handleCommand({ eventStore, streamId: codeStream(code), decider: authorizationCodeDecider, command: { kind: 'issue', userLaui, clientId, expiresAt, sessionId }, metadata });
      return code;
    },

    /**
     * Single use: a second redemption, an unknown or an expired code, or one whose session has
     * ended all give 401. The session of a code issued before sessions had ids is a new one.
     */
    async redeemCode(code: string, metadata: EventMetadata): Promise<{ userLaui: Laui; sessionId: string }> {
      const issued = await loadState(eventStore, codeStream(code), authorizationCodeDecider);
      if (issued.status !== 'none' && (await sessionEnded(issued.sessionId))) throw unauthorized(INVALID_CODE);
      const result = await handleCommand({ eventStore, streamId: codeStream(code), decider: authorizationCodeDecider, command: { kind: 'redeem', at: at() }, metadata });
      if (result.state.status === 'none') throw unauthorized(INVALID_CODE);
      return { userLaui: result.state.userLaui, sessionId: result.state.sessionId ?? newSessionId() };
    },

    startRefreshFamily(userLaui: Laui, sessionId: string, metadata: EventMetadata): Promise<string> {
      return issueRefreshToken(userLaui, randomUUID(), sessionId, metadata);
    },

    /**
     * Rotates: returns the user, the session and the successor token; reuse of a rotated token
     * revokes the family, and a token of an ended session is refused. A family from before
     * sessions had ids continues in a new session, so its next access tokens can be logged out.
     */
    async rotateRefreshToken(token: string, metadata: EventMetadata): Promise<{ userLaui: Laui; sessionId: string; token: string }> {
      if (!REFRESH_TOKEN_PATTERN.test(token)) throw unauthorized(INVALID_CODE);
      const current = await loadState(eventStore, refreshStream(token), refreshTokenDecider);
      if (current.status === 'none') throw unauthorized(INVALID_CODE);
      const family = await loadState(eventStore, familyStream(current.familyId), refreshFamilyDecider);
      const result = await handleCommand({
        eventStore,
        streamId: refreshStream(token),
        decider: refreshTokenDecider,
        command: { kind: 'redeem', at: at(), familyRevoked: family.revoked, sessionEnded: await sessionEnded(current.sessionId) },
        metadata,
      });
      if (result.events.some((event) => event.type === 'RefreshTokenReuseDetected')) {
        await handleCommand({ eventStore, streamId: familyStream(current.familyId), decider: refreshFamilyDecider, command: { kind: 'revoke', reason: 'reuse detected' }, metadata });
        throw unauthorized(INVALID_CODE);
      }
      const sessionId = current.sessionId ?? newSessionId();
      return { userLaui: current.userLaui, sessionId, token: await issueRefreshToken(current.userLaui, current.familyId, sessionId, metadata) };
    },

    /** Logout: the presented token's whole family stops working. Returns the token's session, if any. */
    async revokeRefreshToken(token: string, metadata: EventMetadata): Promise<{ userLaui: Laui; sessionId: string | null } | null> {
      if (!REFRESH_TOKEN_PATTERN.test(token)) return null;
      const current = await loadState(eventStore, refreshStream(token), refreshTokenDecider);
      if (current.status === 'none') return null;
      await handleCommand({ eventStore, streamId: familyStream(current.familyId), decider: refreshFamilyDecider, command: { kind: 'revoke', reason: 'logout' }, metadata });
      return { userLaui: current.userLaui, sessionId: current.sessionId };
    },

    /**
     * Logout: the session's cookie, codes, access and refresh tokens all stop working. Returns the
     * position to wait for before answering (the auth middleware reads the ended-sessions read
     * model), or null when it had already ended.
     */
    async endSession(sessionId: string, userLaui: Laui | null, reason: string, metadata: EventMetadata): Promise<Position | null> {
      if (!SESSION_ID_PATTERN.test(sessionId)) return null;
      const result = await handleCommand({ eventStore, streamId: sessionStream(sessionId), decider: sessionDecider, command: { kind: 'end', sessionId, userLaui, reason }, metadata });
      return result.position;
    },
  };
};

export type AuthHandler = ReturnType<typeof authHandler>;
