import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { unauthorized } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { EventStore } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Clock } from '../../shared/clock.ts';
import { handleCommand, loadState } from '../kernel/handleCommand.ts';
import { authorizationCodeDecider, INVALID_CODE } from './authorizationCodeDecider.ts';
import { refreshFamilyDecider, refreshTokenDecider } from './refreshTokenDecider.ts';

/** Codes live long enough for a browser redirect and a token call, no longer. */
export const AUTHORIZATION_CODE_TTL_MS = 5 * 60 * 1000;
export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 60 * 60 * 1000;

const digest = (secret: string): string => createHash('sha256').update(secret).digest('hex');
const codeStream = (code: string) => `authcode-${digest(code)}`;
const refreshStream = (token: string) => `refresh-${digest(token)}`;
const familyStream = (familyId: string) => `refreshfamily-${familyId}`;

export const REFRESH_TOKEN_PATTERN = /^[0-9a-f]{64}$/;

export const authHandler = ({ eventStore, clock }: { eventStore: EventStore; clock: Clock }) => {
  const at = () => clock.now().toISOString();

  const issueRefreshToken = async (userLaui: Laui, familyId: string, metadata: EventMetadata): Promise<string> => {
    const token = randomBytes(32).toString('hex');
    const expiresAt = new Date(clock.now().getTime() + REFRESH_TOKEN_TTL_MS).toISOString();
    await handleCommand(eventStore, refreshStream(token), refreshTokenDecider, { kind: 'issue', userLaui, familyId, expiresAt }, metadata);
    return token;
  };

  return {
    /** A 128-bit hex code; only its hash is stored. */
    async issueCode(userLaui: Laui, clientId: string, metadata: EventMetadata): Promise<string> {
      const code = randomBytes(16).toString('hex');
      const expiresAt = new Date(clock.now().getTime() + AUTHORIZATION_CODE_TTL_MS).toISOString();
      await handleCommand(eventStore, codeStream(code), authorizationCodeDecider, { kind: 'issue', userLaui, clientId, expiresAt }, metadata);
      return code;
    },

    /** Single use: a second redemption, an unknown or an expired code all give 401. */
    async redeemCode(code: string, metadata: EventMetadata): Promise<Laui> {
      const result = await handleCommand(eventStore, codeStream(code), authorizationCodeDecider, { kind: 'redeem', at: at() }, metadata);
      if (result.state.status === 'none') throw unauthorized(INVALID_CODE);
      return result.state.userLaui;
    },

    startRefreshFamily(userLaui: Laui, metadata: EventMetadata): Promise<string> {
      return issueRefreshToken(userLaui, randomUUID(), metadata);
    },

    /** Rotates: returns the user and the successor token; reuse of a rotated token revokes the family. */
    async rotateRefreshToken(token: string, metadata: EventMetadata): Promise<{ userLaui: Laui; token: string }> {
      if (!REFRESH_TOKEN_PATTERN.test(token)) throw unauthorized(INVALID_CODE);
      const current = await loadState(eventStore, refreshStream(token), refreshTokenDecider);
      if (current.status === 'none') throw unauthorized(INVALID_CODE);
      const family = await loadState(eventStore, familyStream(current.familyId), refreshFamilyDecider);
      const result = await handleCommand(
        eventStore,
        refreshStream(token),
        refreshTokenDecider,
        { kind: 'redeem', at: at(), familyRevoked: family.revoked },
        metadata,
      );
      if (result.events.some((event) => event.type === 'RefreshTokenReuseDetected')) {
        await handleCommand(eventStore, familyStream(current.familyId), refreshFamilyDecider, { kind: 'revoke', reason: 'reuse detected' }, metadata);
        throw unauthorized(INVALID_CODE);
      }
      return { userLaui: current.userLaui, token: await issueRefreshToken(current.userLaui, current.familyId, metadata) };
    },

    /** Logout: the presented token's whole family stops working. */
    async revokeRefreshToken(token: string, metadata: EventMetadata): Promise<void> {
      if (!REFRESH_TOKEN_PATTERN.test(token)) return;
      const current = await loadState(eventStore, refreshStream(token), refreshTokenDecider);
      if (current.status === 'none') return;
      await handleCommand(eventStore, familyStream(current.familyId), refreshFamilyDecider, { kind: 'revoke', reason: 'logout' }, metadata);
    },
  };
};

export type AuthHandler = ReturnType<typeof authHandler>;
