import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { KafkaConfig, SASLOptions } from 'kafkajs';
import type { KafkaSaslConfig, KafkaSslConfig } from '../../config.ts';

/** What every kafkajs client of the service (the bus, the domain-events producer) is given besides its brokers. */
export type KafkaClientSecurity = Pick<KafkaConfig, 'ssl' | 'sasl'>;

/** Reads a file's text; a test passes its own. */
export type ReadText = (path: string) => string;

const readText: ReadText = (path) => readFileSync(path, 'utf8');

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * The kafkajs `ssl` and `sasl` options of KAFKA_SSL and KAFKA_SASL_*, the files read and checked
 * now, at start: a file that cannot be read, holds no certificate, a key that is not a PEM key
 * (or is encrypted: there is no passphrase setting), a client key that is not the certificate's or
 * an expired client certificate stop the start with the variable and the path named, rather than
 * failing at the first connection with an OpenSSL code. Messages never quote a file's contents.
 * With TLS, Node verifies the broker's certificate and its name (127.0.0.1 against an IP SAN);
 * KAFKA_SSL_CA_FILE replaces Node's public CAs when given.
 */
export const kafkaClientSecurity = (bus: { ssl: KafkaSslConfig | null; sasl: KafkaSaslConfig | null }, options: { read?: ReadText; now?: Date } = {}): KafkaClientSecurity => {
  const read = options.read ?? readText;
  const security: KafkaClientSecurity = {};
  if (bus.ssl) {
    const { caFile, certFile, keyFile } = bus.ssl;
    const ssl: { ca?: string[]; cert?: string; key?: string } = {};
    if (caFile !== null) ssl.ca = certificates('KAFKA_SSL_CA_FILE', caFile, readFile(caFile, 'KAFKA_SSL_CA_FILE', read));
    if (certFile !== null && keyFile !== null) {
      const certText = readFile(certFile, 'KAFKA_SSL_CERT_FILE', read);
      const [leaf] = certificates('KAFKA_SSL_CERT_FILE', certFile, certText);
      const certificate = new X509Certificate(leaf ?? '');
      const keyText = readFile(keyFile, 'KAFKA_SSL_KEY_FILE', read);
      const key = privateKey(keyFile, keyText);
      if (!certificate.checkPrivateKey(key)) throw new Error(`KAFKA_SSL_KEY_FILE (${keyFile}) is not the private key of the certificate in KAFKA_SSL_CERT_FILE (${certFile})`);
      const now = options.now ?? new Date();
      if (Date.parse(certificate.validTo) < now.getTime()) throw new Error(`KAFKA_SSL_CERT_FILE (${certFile}): the client certificate expired on ${certificate.validTo}`);
      ssl.cert = certText;
      ssl.key = keyText;
    }
    security.ssl = ssl;
  }
  if (bus.sasl) security.sasl = saslOptions(bus.sasl);
  return security;
};

/**
 * A warning for the start when the settings authenticate but do not encrypt: SCRAM keeps the
 * password off the wire, but every message (execute_task, heartbeats, domain-events) crosses in
 * clear and can be read on the way. Null when there is nothing to say.
 */
export const kafkaSecurityWarning = (bus: { ssl: KafkaSslConfig | null; sasl: KafkaSaslConfig | null }): string | null =>
  bus.sasl !== null && bus.ssl === null
    ? `KAFKA_SASL_MECHANISM=${bus.sasl.mechanism} without KAFKA_SSL=true: the bus authenticates to Kafka but its messages cross the network unencrypted`
    : null;

const saslOptions = ({ mechanism, username, password }: KafkaSaslConfig): SASLOptions => {
  switch (mechanism) {
    case 'plain':
      return { mechanism, username, password };
    case 'scram-sha-256':
      return { mechanism, username, password };
    case 'scram-sha-512':
      return { mechanism, username, password };
  }
};

const readFile = (path: string, name: string, read: ReadText): string => {
  try {
    return read(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(`${name} (${path}) cannot be read${code ? ` (${code})` : ''}: the service reads it at start`, { cause: error });
  }
};

/** The PEM certificates in a file, each parsed (a damaged one stops the start). */
const certificates = (name: string, path: string, pem: string): string[] => {
  const found = pem.match(PEM_CERTIFICATE) ?? [];
  if (found.length === 0) throw new Error(`${name} (${path}) holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  for (const certificate of found) {
    try {
      new X509Certificate(certificate);
    } catch {
      throw new Error(`${name} (${path}) holds a PEM certificate that does not parse`);
    }
  }
  return found;
};

const privateKey = (path: string, pem: string): KeyObject => {
  try {
    return createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    // Also what an encrypted key gives without a passphrase: there is no passphrase setting.
    throw new Error(`KAFKA_SSL_KEY_FILE (${path}) is not an unencrypted PEM private key`);
  }
};
