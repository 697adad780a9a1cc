import type { Laui } from '../ids.ts';

/**
 * Signed, expiring tokens. `access` tokens are the Bearer / frontend_token JWTs; `session` and
 * `oauth_flow` sign the cookies of the login flow so that a client cannot forge or alter them;
 * `worker` tokens are the Bearer tokens a run's code gets to report on its own task (task/update,
 * task/finish), signed and verified by the service alone.
 */
export type TokenAudience = 'access' | 'session' | 'oauth_flow' | 'worker';

export interface VerifiedToken {
  subject: Laui | null;
  claims: Record<string, unknown>;
  expiresAt: Date;
}

export class InvalidTokenError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'InvalidTokenError';
  }
}

export interface TokenSigner {
  sign(audience: TokenAudience, subject: Laui | null, claims: Record<string, unknown>, ttlSeconds: number): Promise<string>;
  /**
   * Throws InvalidTokenError for a bad signature, another key, alg none, wrong audience, expiry, and
   * for a lifetime (exp - iat) beyond the audience's MAX_TOKEN_TTL_SECONDS or an iat in the future.
   */
  verify(audience: TokenAudience, token: string): Promise<VerifiedToken>;
}

export const ACCESS_TOKEN_TTL_SECONDS = 24 * 60 * 60;

/**
 * The longest lifetime a token of each audience may have, enforced on verification: a key that ever
 * leaked cannot mint century-long tokens, only tokens that die within these bounds. The spec's 24 h
 * for access tokens (§8), the 24 h session cookie, the 10-minute login flow cookie and a worker
 * token's day.
 */
export const MAX_TOKEN_TTL_SECONDS: Readonly<Record<TokenAudience, number>> = {
  access: ACCESS_TOKEN_TTL_SECONDS,
  session: 24 * 60 * 60,
  oauth_flow: 10 * 60,
  worker: 24 * 60 * 60,
};
