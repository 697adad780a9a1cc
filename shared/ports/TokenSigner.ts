import type { Laui } from '../ids.ts';

/**
 * Signed, expiring tokens. `access` tokens are the Bearer / frontend_token JWTs; `session` and
 * `oauth_flow` sign the cookies of the login flow so that a client cannot forge or alter them.
 */
export type TokenAudience = 'access' | 'session' | 'oauth_flow';

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
  /** Throws InvalidTokenError for a bad signature, another key, alg none, wrong audience, expiry. */
  verify(audience: TokenAudience, token: string): Promise<VerifiedToken>;
}

export const ACCESS_TOKEN_TTL_SECONDS = 24 * 60 * 60;
