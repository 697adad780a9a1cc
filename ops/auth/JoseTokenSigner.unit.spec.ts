import { expect } from 'chai';
import { SignJWT, exportSPKI, generateKeyPair, jwtVerify, type CryptoKey } from 'jose';
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

describe('JoseTokenSigner worker tokens (HS256, their own audience)', () => {
  const SUBJECT = '65a000000000000000000001';
  let keys: { privateKey: CryptoKey; publicKey: CryptoKey };
  const secret = new Uint8Array(32).fill(9);
  let signer: JoseTokenSigner;
  before(async () => {
    keys = await generateKeyPair('RS256');
    signer = new JoseTokenSigner(keys.privateKey, keys.publicKey, fixedClock(NOW), secret);
  });
  const verdict = (audience: TokenAudience, token: string, by = signer) =>
    by.verify(audience, token).then(
      (verified) => verified.claims.task_laui ?? 'verified',
      (error: unknown) => (error instanceof InvalidTokenError ? 'refused' : 'thrown'),
    );

  it('given a worker token, when verified as a worker token, then its claims are read; as an access or session token, refused', async () => {
    const token = await signer.sign('worker', SUBJECT, { purpose: 'worker', task_laui: 't-1' }, 24 * HOUR);
    expect(JSON.parse(Buffer.from(String(token.split('.')[0]), 'base64url').toString())).to.deep.include({ alg: 'HS256' });
    expect(await verdict('worker', token)).to.equal('t-1');
    expect(await verdict('access', token)).to.equal('refused');
    expect(await verdict('session', token)).to.equal('refused');
  });

  it('given a worker token (signed with node:crypto), when jose verifies it with the secret, then it reads the claims jose would have written', async () => {
    const token = await signer.sign('worker', SUBJECT, { purpose: 'worker', task_laui: 't-1' }, HOUR);
    const { payload, protectedHeader } = await jwtVerify(token, secret, { algorithms: ['HS256'], issuer: 'pipeline-orchestrator', audience: 'worker', currentDate: NOW });
    expect(protectedHeader).to.deep.equal({ alg: 'HS256', typ: 'JWT' });
    expect(payload).to.deep.include({ purpose: 'worker', task_laui: 't-1', sub: SUBJECT, iat: now, exp: now + HOUR });
    expect(payload.jti).to.be.a('string');
    const anonymous = await signer.sign('worker', null, { task_laui: 't-2' }, HOUR);
    expect((await jwtVerify(anonymous, secret, { currentDate: NOW })).payload).to.not.have.property('sub');
  });

  it('given an access token, or a token made with the public key as an HMAC secret, when verified as a worker token, then refused', async () => {
    expect(await verdict('worker', await signer.sign('access', SUBJECT, { task_laui: 't-1' }, HOUR))).to.equal('refused');
    const spki = new TextEncoder().encode(await exportSPKI(keys.publicKey));
    const forged = await new SignJWT({ task_laui: 't-1' }).setProtectedHeader({ alg: 'HS256' }).setIssuer('pipeline-orchestrator').setAudience('worker').setIssuedAt(now).setExpirationTime(now + HOUR).sign(spki);
    expect(await verdict('worker', forged)).to.equal('refused');
  });

  it('given a worker token of another secret (another service), or one living over a day, when verified, then refused', async () => {
    const other = new JoseTokenSigner(keys.privateKey, keys.publicKey, fixedClock(NOW), new Uint8Array(32).fill(1));
    expect(await verdict('worker', await other.sign('worker', SUBJECT, { task_laui: 't-1' }, HOUR))).to.equal('refused');
    const long = await new SignJWT({ task_laui: 't-1' }).setProtectedHeader({ alg: 'HS256' }).setIssuer('pipeline-orchestrator').setAudience('worker').setIssuedAt(now).setExpirationTime(now + 24 * HOUR + 1).sign(secret);
    expect(await verdict('worker', long)).to.equal('refused');
  });
});
