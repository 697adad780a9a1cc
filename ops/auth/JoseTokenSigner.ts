import { randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, type CryptoKey } from 'jose';
import type { Clock } from '../../shared/clock.ts';
import { InvalidTokenError, type TokenAudience, type TokenSigner, type VerifiedToken } from '../../shared/ports/TokenSigner.ts';

const ISSUER = 'pipeline-orchestrator';

/** RS256 only: verification pins the algorithm, so `alg: none` and HMAC-with-public-key tricks fail. */
export class JoseTokenSigner implements TokenSigner {
  constructor(
    private readonly privateKey: CryptoKey,
    private readonly publicKey: CryptoKey,
    private readonly clock: Clock,
  ) {}

  async sign(audience: TokenAudience, subject: string | null, claims: Record<string, unknown>, ttlSeconds: number): Promise<string> {
    const now = Math.floor(this.clock.now().getTime() / 1000);
    const jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
      .setIssuer(ISSUER)
      .setAudience(audience)
      .setIssuedAt(now)
      .setExpirationTime(now + ttlSeconds)
      .setJti(randomUUID());
    if (subject !== null) jwt.setSubject(subject);
    return jwt.sign(this.privateKey);
  }

  async verify(audience: TokenAudience, token: string): Promise<VerifiedToken> {
    try {
      const { payload } = await jwtVerify(token, this.publicKey, {
        algorithms: ['RS256'],
        issuer: ISSUER,
        audience,
        currentDate: this.clock.now(),
        requiredClaims: ['exp', 'iat'],
      });
      return {
        subject: typeof payload.sub === 'string' ? payload.sub : null,
        claims: payload as Record<string, unknown>,
        expiresAt: new Date((payload.exp ?? 0) * 1000),
      };
    } catch (error) {
      throw new InvalidTokenError(error instanceof Error ? error.message : 'invalid token');
    }
  }
}
