import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, type CryptoKey } from 'jose';
import type { Clock } from '../../shared/clock.ts';
import { InvalidTokenError, MAX_TOKEN_TTL_SECONDS, type TokenAudience, type TokenSigner, type VerifiedToken } from '../../shared/ports/TokenSigner.ts';

const ISSUER = 'pipeline-orchestrator';
/** The protected header of every worker token, encoded once. */
const WORKER_HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

/**
 * How far a token's iat may lie ahead of this process's clock: several processes sign and verify
 * each other's tokens and their clocks differ a little. Not more: an iat in the future would stretch
 * the time a token lives past its bounded lifetime.
 */
const CLOCK_SKEW_SECONDS = 60;

/** Verified tokens kept (all audiences together) so that a client's every request does not pay an RSA verification. */
const CACHE_SIZE = 10_000;

/**
 * RS256 for the tokens clients hold (access, session, login flow), HS256 for worker tokens, each
 * audience pinned to its one algorithm and key on verification: `alg: none`, HMAC-with-public-key
 * and a worker token presented as an access token (or the reverse) all fail.
 *
 * Why worker tokens are HMACs: one is signed for every task dispatched for the first time in a day
 * (a batch of 1,000 new tasks signs 1,000), and an RSA-2048 signature costs ~0.7-1 ms of CPU here
 * against ~0.15 ms for HS256 (issue 34's CPU per job). Only the service signs and verifies them, so
 * a symmetric key loses nothing; it is derived from the JWT private key (ops/keys/loadKeys.ts), so
 * every process holding that key agrees, and nothing derived from the public key can forge one.
 * Lifetimes are bounded per audience (MAX_TOKEN_TTL_SECONDS) on both sides: sign refuses a longer
 * ttl, verify refuses a token whose exp - iat is longer or whose iat lies in the future.
 * A successful verification is cached by (audience, token) until the token expires: the same
 * bytes verify the same way, and WebCrypto RSA verification dominated request CPU without it.
 */
export class JoseTokenSigner implements TokenSigner {
  /**
   * One map per audience keyed by the token itself: a composite `${audience} ${token}` key was a
   * new ~800-character string per request, copied and hashed before every lookup.
   */
  private readonly verified = new Map<TokenAudience, Map<string, VerifiedToken>>();

  constructor(
    private readonly privateKey: CryptoKey,
    private readonly publicKey: CryptoKey,
    private readonly clock: Clock,
    /** The HS256 key of worker tokens; by default one of this signer's own (its tokens verify only here). */
    private readonly workerSecret: Uint8Array = randomBytes(32),
  ) {}

  async sign(audience: TokenAudience, subject: string | null, claims: Record<string, unknown>, ttlSeconds: number): Promise<string> {
    if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0 || ttlSeconds > MAX_TOKEN_TTL_SECONDS[audience]) {
      throw new Error(`A ${audience} token may live 1 to ${MAX_TOKEN_TTL_SECONDS[audience]} seconds, not ${ttlSeconds}`);
    }
    const now = Math.floor(this.clock.now().getTime() / 1000);
    if (audience === 'worker') return this.signWorker(subject, claims, now, ttlSeconds);
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

  /**
   * A worker token (HS256) made with node:crypto's HMAC, in the same form jose makes and verifies
   * (the claims, then iss, aud, iat, exp, jti and sub). jose's sign goes through WebCrypto: an
   * imported key and an asynchronous HMAC per token, a thread-pool round trip each; a batch of new
   * tasks signs one token per task (issue 34: ~0.14 ms of the event loop per run of a new task).
   */
  private signWorker(subject: string | null, claims: Record<string, unknown>, now: number, ttlSeconds: number): string {
    const payload: Record<string, unknown> = { ...claims, iss: ISSUER, aud: 'worker', iat: now, exp: now + ttlSeconds, jti: randomUUID() };
    if (subject !== null) payload.sub = subject;
    const signed = `${WORKER_HEADER}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
    return `${signed}.${createHmac('sha256', this.workerSecret).update(signed).digest('base64url')}`;
  }

  async verify(audience: TokenAudience, token: string): Promise<VerifiedToken> {
    let verified = this.verified.get(audience);
    if (!verified) {
      verified = new Map();
      this.verified.set(audience, verified);
    }
    const cached = verified.get(token);
    if (cached) {
      if (cached.expiresAt.getTime() > this.clock.now().getTime()) return cached;
      verified.delete(token);
    }
    const result = await this.verifyUncached(audience, token);
    this.makeRoom();
    verified.set(token, result);
    return result;
  }

  /** One bound for the whole cache, as when it was one map: the oldest token of the fullest audience goes. */
  private makeRoom(): void {
    let total = 0;
    let fullest: Map<string, VerifiedToken> | undefined;
    for (const tokens of this.verified.values()) {
      total += tokens.size;
      if (!fullest || tokens.size > fullest.size) fullest = tokens;
    }
    if (total >= CACHE_SIZE && fullest) fullest.delete(fullest.keys().next().value as string);
  }

  private async verifyUncached(audience: TokenAudience, token: string): Promise<VerifiedToken> {
    try {
      const worker = audience === 'worker';
      const { payload } = await jwtVerify(token, worker ? this.workerSecret : this.publicKey, {
        algorithms: [worker ? 'HS256' : 'RS256'],
        issuer: ISSUER,
        audience,
        currentDate: this.clock.now(),
        requiredClaims: ['exp', 'iat'],
      });
      // jose has checked both are numbers and that exp has not passed; JSON's 1e400 is Infinity, though.
      const issuedAt = payload.iat as number;
      const expiresAt = payload.exp as number;
      if (!Number.isFinite(issuedAt) || !Number.isFinite(expiresAt)) throw new Error('token dates must be finite');
      if (expiresAt - issuedAt > MAX_TOKEN_TTL_SECONDS[audience]) throw new Error('token lifetime exceeds the maximum');
      if (issuedAt > this.clock.now().getTime() / 1000 + CLOCK_SKEW_SECONDS) throw new Error('token issued in the future');
      return {
        subject: typeof payload.sub === 'string' ? payload.sub : null,
        claims: payload as Record<string, unknown>,
        expiresAt: new Date(expiresAt * 1000),
      };
    } catch (error) {
      throw new InvalidTokenError(error instanceof Error ? error.message : 'invalid token');
    }
  }
}
