import { expect } from 'chai';
import { SignJWT, generateKeyPair, type CryptoKey } from 'jose';
import { fixedClock } from '../../shared/clock.ts';
import { InvalidTokenError, type TokenAudience } from '../../shared/ports/TokenSigner.ts';
import { JoseTokenSigner } from './JoseTokenSigner.ts';

const NOW = new Date('2026-01-01T00:00:00Z');
const now = NOW.getTime() / 1000;
const HOUR = 3600;

describe('JoseTokenSigner lifetimes', () => {
  let privateKey: CryptoKey;
  let signer: JoseTokenSigner;
  before(async () => {
    const keys = await generateKeyPair('RS256');
    privateKey = keys.privateKey;
    signer = new JoseTokenSigner(keys.privateKey, keys.publicKey, fixedClock(NOW));
  });

  /** What someone holding the private key could mint, bypassing sign()'s own bound. */
  const mint = (audience: TokenAudience, dates: { iat?: number; exp?: number }) => {
    const jwt = new SignJWT({}).setProtectedHeader({ alg: 'RS256' }).setIssuer('pipeline-orchestrator').setAudience(audience).setSubject('65a000000000000000000001');
    if (dates.iat !== undefined) jwt.setIssuedAt(dates.iat);
    if (dates.exp !== undefined) jwt.setExpirationTime(dates.exp);
    return jwt.sign(privateKey);
  };

  const refused = async (audience: TokenAudience, token: string) => {
    const error = await signer.verify(audience, token).then(
      () => null,
      (caught: unknown) => caught,
    );
    return error instanceof InvalidTokenError;
  };

  it('given tokens of each audience at their maximum lifetime, when verified, then they are accepted', async () => {
    expect(await refused('access', await mint('access', { iat: now, exp: now + 24 * HOUR }))).to.equal(false);
    expect(await refused('session', await mint('session', { iat: now - HOUR, exp: now + 23 * HOUR }))).to.equal(false);
    expect(await refused('oauth_flow', await mint('oauth_flow', { iat: now, exp: now + 600 }))).to.equal(false);
    expect(await refused('access', await signer.sign('access', '65a000000000000000000001', {}, 24 * HOUR))).to.equal(false);
  });

  it('given a leaked key minting a century-long access token, when verified, then it is refused', async () => {
    expect(await refused('access', await mint('access', { iat: now, exp: now + 100 * 365 * 24 * HOUR }))).to.equal(true);
    expect(await refused('access', await mint('access', { iat: now, exp: now + 24 * HOUR + 1 }))).to.equal(true);
  });

  it('given session and login-flow tokens beyond their maxima, when verified, then they are refused', async () => {
    expect(await refused('session', await mint('session', { iat: now, exp: now + 25 * HOUR }))).to.equal(true);
    expect(await refused('oauth_flow', await mint('oauth_flow', { iat: now, exp: now + 601 }))).to.equal(true);
  });

  it('given a missing iat or exp, or an iat in the future, when verified, then the token is refused', async () => {
    expect(await refused('access', await mint('access', { exp: now + HOUR }))).to.equal(true);
    expect(await refused('access', await mint('access', { iat: now }))).to.equal(true);
    // 24 h apart, but starting in a century: it would live a century.
    expect(await refused('access', await mint('access', { iat: now + 100 * 365 * 24 * HOUR, exp: now + 100 * 365 * 24 * HOUR + HOUR }))).to.equal(true);
    expect(await refused('access', await mint('access', { iat: now + 2 * 60, exp: now + HOUR }))).to.equal(true);
    // A little clock skew between processes is fine.
    expect(await refused('access', await mint('access', { iat: now + 30, exp: now + HOUR }))).to.equal(false);
  });

  it('given a ttl beyond the audience maximum, when signing, then sign refuses', async () => {
    for (const [audience, ttl] of [['access', 24 * HOUR + 1], ['session', 25 * HOUR], ['oauth_flow', 601], ['access', 0]] as const) {
      const error = await signer.sign(audience, null, {}, ttl).then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(error, `${audience} ${ttl}`).to.be.instanceOf(Error);
    }
  });
});
