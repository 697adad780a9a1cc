import { expect } from 'chai';
import type { Sealed, SecretBox } from '../ports/SecretBox.ts';
import { isSecretKey, MASK, maskSealedFields, maskSecrets, sealSecretFields, secretFieldOpener, secretStringsOf } from './secretFields.ts';

/** A reversible stand-in for AES that counts its opens. */
const countingBox = () => {
  const box = {
    opens: 0,
    seal: (plaintext: string): Sealed => ({ v: 1, iv: '', tag: '', ct: Buffer.from(plaintext).toString('base64') }),
    open: (sealed: Sealed): string => {
      box.opens += 1;
      return Buffer.from(sealed.ct, 'base64').toString('utf8');
    },
  } satisfies SecretBox & { opens: number };
  return box;
};

describe('secretFieldOpener', () => {
  it('given the same sealed content opened for several runs, when opened, then it is decrypted once and every run gets its value', () => {
    const box = countingBox();
    const { content } = sealSecretFields('connection', { content: { password: 'pw-1' } }, box);
    const open = secretFieldOpener(box);
    expect(open(content)).to.deep.equal({ password: 'pw-1' });
    expect(open(content)).to.deep.equal({ password: 'pw-1' });
    expect(box.opens).to.equal(1);
  });

  it('given changed content (a new sealed value) or content that is not sealed, when opened, then the new value is decrypted and plain content passes through', () => {
    const box = countingBox();
    const open = secretFieldOpener(box);
    const first = sealSecretFields('connection', { content: { password: 'pw-1' } }, box).content;
    const second = sealSecretFields('connection', { content: { password: 'pw-2' } }, box).content;
    expect([open(first), open(second)]).to.deep.equal([{ password: 'pw-1' }, { password: 'pw-2' }]);
    expect(box.opens).to.equal(2);
    const plain = { host: 'db' };
    expect(open(plain)).to.equal(plain);
  });
});

describe('maskSecrets (issue 19: readers see non-secret connection fields)', () => {
  it('given connection content with secret-bearing and ordinary keys, nested objects and lists, when masked, then only the secrets are masked', () => {
    const content = {
      host: 'db.example',
      port: 5432,
      database: 'sales',
      user: 'etl',
      region: 'eu-west-1',
      project: 'analytics',
      password: 'pw',
      passwd: 'pw',
      PWD: 'pw',
      db_pass: 'pw',
      client_secret: 'cs',
      secret_access_key: 'sak',
      aws_access_key_id: 'AKIA',
      apiKey: 'ak',
      api_key: 'ak',
      private_key: '-----BEGIN',
      access_token: 'at',
      refreshToken: 'rt',
      credentials: { type: 'service_account', private_key: 'x' },
      service_account: { client_email: 'a@b', private_key: 'x' },
      key: 'k',
      token_limit: 4096,
      auth_type: 'password',
      empty_password: null,
      nested: { endpoint: 'https://api.example', token: 't', list: [{ name: 'a', secret: 's' }] },
      dsn: 'postgres://etl:pw@db.example:5432/sales',
      jdbc_url: 'jdbc:sqlserver://db;user=etl;password=pw;database=sales',
      url: 'http://db.example:8080/path',
    };
    expect(maskSecrets(content)).to.deep.equal({
      host: 'db.example',
      port: 5432,
      database: 'sales',
      user: 'etl',
      region: 'eu-west-1',
      project: 'analytics',
      password: MASK,
      passwd: MASK,
      PWD: MASK,
      db_pass: MASK,
      client_secret: MASK,
      secret_access_key: MASK,
      aws_access_key_id: MASK,
      apiKey: MASK,
      api_key: MASK,
      private_key: MASK,
      access_token: MASK,
      refreshToken: MASK,
      credentials: MASK,
      service_account: MASK,
      key: MASK,
      token_limit: 4096,
      auth_type: 'password',
      empty_password: null,
      nested: { endpoint: 'https://api.example', token: MASK, list: [{ name: 'a', secret: MASK }] },
      dsn: `postgres://etl:${MASK}@db.example:5432/sales`,
      jdbc_url: `jdbc:sqlserver://db;user=etl;password=${MASK};database=sales`,
      url: 'http://db.example:8080/path',
    });
  });

  it('given sealed content, when a reader views it, then the shown form is what maskSecrets gives; a value sealed before the rule shows its keys masked', () => {
    const box = countingBox();
    const sealed = sealSecretFields('connection', { content: { host: 'db', password: 'pw' } }, box);
    expect(maskSealedFields({ ...sealed })).to.deep.equal({ content: { host: 'db', password: MASK } });
    const legacy = { $sealed: box.seal('{"host":"db","password":"pw"}'), keys: ['host', 'password'] };
    expect(maskSealedFields({ content: legacy })).to.deep.equal({ content: { host: MASK, password: MASK } });
    expect(isSecretKey('hostname')).to.equal(false);
  });
});

describe('secretStringsOf: what a run\'s output must not show', () => {
  it('given a connection with secrets at any depth, a password in a URL and short values, when read, then every secret string of 4+ characters is listed once', () => {
    const content = {
      host: 'db.example',
      user: 'loader',
      password: 'hunter22',
      pin: 1234,
      options: { api_key: 'k-123456', region: 'eu' },
      tokens: [{ refresh_token: 'rt-abcdef' }],
      dsn: 'postgres://loader:url-secret-9@db.example/app',
      other_password: 'hunter22',
      short: { secret: 'abc' },
    };
    expect(secretStringsOf(content).sort()).to.deep.equal(['hunter22', 'k-123456', 'rt-abcdef', 'url-secret-9'].sort());
    expect(secretStringsOf({ password: 4711 })).to.deep.equal(['4711']);
    expect(secretStringsOf(null)).to.deep.equal([]);
    expect(secretStringsOf({ host: 'db', port: 5432 })).to.deep.equal([]);
  });
});
