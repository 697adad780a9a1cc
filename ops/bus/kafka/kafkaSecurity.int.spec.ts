import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KafkaSaslConfig, KafkaSslConfig } from '../../config.ts';
import { kafkaClientSecurity, kafkaSecurityWarning } from './kafkaSecurity.ts';

/**
 * KAFKA_SSL's files read and checked at start: certificates and keys made with openssl in a
 * temporary folder (a CA, a client certificate signed by it, a stranger's key, an encrypted key).
 */
describe('Kafka client security from the settings (files read at start)', function () {
  this.timeout(60_000);
  let dir: string;
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const SASL: KafkaSaslConfig = { mechanism: 'scram-sha-512', username: 'svc', password: 'never-in-a-message-0815' };
  const ssl = (files: Partial<KafkaSslConfig>): KafkaSslConfig => ({ caFile: null, certFile: null, keyFile: null, ...files });

  before(function () {
    try {
      execFileSync('openssl', ['version'], { stdio: 'ignore' });
    } catch {
      console.log('      skipped: openssl is not installed (it makes the test certificates)');
      this.skip();
    }
    dir = mkdtempSync(join(tmpdir(), 'kafka-security-'));
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=test CA');
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'client.key', '-out', 'client.csr', '-subj', '/CN=client');
    openssl('x509', '-req', '-in', 'client.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'client.pem', '-days', '2');
    openssl('genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', 'stranger.key');
    openssl('pkcs8', '-topk8', '-in', 'client.key', '-out', 'encrypted.key', '-passout', 'pass:secret');
    writeFileSync(file('bundle.pem'), `${readFileSync(file('ca.pem'), 'utf8')}${readFileSync(file('client.pem'), 'utf8')}`);
    writeFileSync(file('garbage.pem'), 'not a certificate\n');
    writeFileSync(file('broken.pem'), '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('given no KAFKA_SSL nor SASL, when the security is built, then the clients get neither (plaintext)', () => {
    expect(kafkaClientSecurity({ ssl: null, sasl: null })).to.deep.equal({});
  });

  it('given KAFKA_SSL with a CA bundle and SASL, when built, then kafkajs gets every CA certificate and the SASL mechanism, user and password', () => {
    const security = kafkaClientSecurity({ ssl: ssl({ caFile: file('bundle.pem') }), sasl: SASL });
    expect(security.ssl).to.deep.equal({ ca: readFileSync(file('bundle.pem'), 'utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) });
    expect((security.ssl as { ca: string[] }).ca).to.have.length(2);
    expect(security.sasl).to.deep.equal({ mechanism: 'scram-sha-512', username: 'svc', password: SASL.password });
  });

  it('given KAFKA_SSL without files, when built, then TLS is on with Node\'s public CAs (an empty options object)', () => {
    expect(kafkaClientSecurity({ ssl: ssl({}), sasl: null })).to.deep.equal({ ssl: {} });
  });

  it('given a client certificate and its key, when built, then both go to kafkajs as read', () => {
    const security = kafkaClientSecurity({ ssl: ssl({ caFile: file('ca.pem'), certFile: file('client.pem'), keyFile: file('client.key') }), sasl: null });
    expect(security.ssl).to.deep.include({ cert: readFileSync(file('client.pem'), 'utf8'), key: readFileSync(file('client.key'), 'utf8') });
  });

  it('given a file that is wrong, when built, then the start stops naming the variable and the path, never quoting a file', () => {
    const cases: Array<[KafkaSslConfig, string]> = [
      [ssl({ caFile: file('missing.pem') }), `KAFKA_SSL_CA_FILE (${file('missing.pem')}) cannot be read (ENOENT)`],
      [ssl({ caFile: dir }), `KAFKA_SSL_CA_FILE (${dir}) cannot be read (EISDIR)`],
      [ssl({ caFile: file('garbage.pem') }), `KAFKA_SSL_CA_FILE (${file('garbage.pem')}) holds no PEM certificate`],
      [ssl({ caFile: file('broken.pem') }), `KAFKA_SSL_CA_FILE (${file('broken.pem')}) holds a PEM certificate that does not parse`],
      [ssl({ certFile: file('client.key'), keyFile: file('client.key') }), `KAFKA_SSL_CERT_FILE (${file('client.key')}) holds no PEM certificate`],
      [ssl({ certFile: file('client.pem'), keyFile: file('missing.key') }), `KAFKA_SSL_KEY_FILE (${file('missing.key')}) cannot be read (ENOENT)`],
      [ssl({ certFile: file('client.pem'), keyFile: file('client.pem') }), `KAFKA_SSL_KEY_FILE (${file('client.pem')}) is not an unencrypted PEM private key`],
      [ssl({ certFile: file('client.pem'), keyFile: file('encrypted.key') }), `KAFKA_SSL_KEY_FILE (${file('encrypted.key')}) is not an unencrypted PEM private key`],
      [ssl({ certFile: file('client.pem'), keyFile: file('stranger.key') }), `KAFKA_SSL_KEY_FILE (${file('stranger.key')}) is not the private key of the certificate in KAFKA_SSL_CERT_FILE`],
    ];
    for (const [files, message] of cases) {
      let error: unknown = null;
      try {
        kafkaClientSecurity({ ssl: files, sasl: SASL });
      } catch (thrown) {
        error = thrown;
      }
      expect(error, message).to.be.instanceOf(Error);
      expect((error as Error).message).to.include(message);
      // Every PEM body of a key or certificate begins with MII; the others are the damaged files' bodies.
      for (const content of ['MII', 'AAAA', 'not a certificate']) expect((error as Error).message).not.to.include(content);
      expect((error as Error).message).not.to.include(SASL.password);
    }
  });

  it('given a client certificate past its end date, when built, then the start stops saying it expired', () => {
    const later = new Date(Date.now() + 30 * 24 * 3600 * 1000);
    expect(() => kafkaClientSecurity({ ssl: ssl({ certFile: file('client.pem'), keyFile: file('client.key') }), sasl: null }, { now: later })).to.throw(
      `KAFKA_SSL_CERT_FILE (${file('client.pem')}): the client certificate expired on`,
    );
  });

  it('given SCRAM without KAFKA_SSL, when the start checks, then it warns that messages cross unencrypted; with TLS or without SASL it says nothing', () => {
    expect(kafkaSecurityWarning({ ssl: null, sasl: SASL })).to.equal(
      'KAFKA_SASL_MECHANISM=scram-sha-512 without KAFKA_SSL=true: the bus authenticates to Kafka but its messages cross the network unencrypted',
    );
    expect(kafkaSecurityWarning({ ssl: ssl({}), sasl: SASL })).to.equal(null);
    expect(kafkaSecurityWarning({ ssl: null, sasl: null })).to.equal(null);
  });
});
