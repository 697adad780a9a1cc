import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import type { BusMessage } from '../../../shared/bus/MessageBus.ts';
import { describeMessageBusContract } from '../../../test/contracts/messageBusContract.ts';
import { requireSecureKafkaBroker, type SecureKafkaBroker } from '../../../test/support/kafkaBroker.ts';
import { waitUntil } from '../../../test/support/waitUntil.ts';
import { loadConfig } from '../../config.ts';
import { kafkaDomainEventSink } from './DomainEventPublisher.ts';
import { KafkaBus } from './KafkaBus.ts';
import { kafkaClientSecurity, type KafkaClientSecurity } from './kafkaSecurity.ts';

/**
 * The Kafka bus against the secure listeners of the `.ci/kafka` broker (eval "$(.ci/kafka env)";
 * .ci/run exports them; skipped with the reason printed without them, failed in CI): SASL over TLS
 * with each mechanism, mutual TLS, and what each refuses. The clients' security comes from the
 * service's own settings (KAFKA_SSL*, KAFKA_SASL_*) through loadConfig and kafkaClientSecurity,
 * the path `npm start` takes.
 */
describe('KafkaBus against a Kafka broker with TLS and SASL', function () {
  this.timeout(300_000);
  let broker: SecureKafkaBroker;
  const PATIENCE = 30_000;

  /** The service's settings for the SASL_SSL listener, with `overrides` on top (undefined removes a setting). */
  const saslSettings = (mechanism: string, overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = {
      KAFKA_BROKERS: broker.saslSsl.brokers.join(','),
      KAFKA_SSL: 'true',
      KAFKA_SSL_CA_FILE: broker.saslSsl.caFile,
      KAFKA_SASL_MECHANISM: mechanism,
      KAFKA_SASL_USERNAME: broker.saslSsl.username,
      KAFKA_SASL_PASSWORD: broker.saslSsl.password,
    };
    for (const [name, value] of Object.entries(overrides)) {
      if (value === undefined) delete env[name];
      else env[name] = value;
    }
    return env;
  };
  const mtlsSettings = (): NodeJS.ProcessEnv => ({
    KAFKA_BROKERS: broker.mtls.brokers.join(','),
    KAFKA_SSL: 'true',
    KAFKA_SSL_CA_FILE: broker.mtls.caFile,
    KAFKA_SSL_CERT_FILE: broker.mtls.certFile,
    KAFKA_SSL_KEY_FILE: broker.mtls.keyFile,
  });

  /** What `npm start` makes of the settings: the brokers and the clients' security. */
  const fromSettings = (env: NodeJS.ProcessEnv): { brokers: string[]; security: KafkaClientSecurity } => {
    const { bus } = loadConfig(env);
    if (bus.kind !== 'kafka') throw new Error('the settings do not name the Kafka bus');
    return { brokers: [...bus.brokers], security: kafkaClientSecurity(bus) };
  };

  const buses: KafkaBus[] = [];
  const openBus = (env: NodeJS.ProcessEnv, maxAttempts = 3): KafkaBus => {
    const bus = new KafkaBus({
      ...fromSettings(env),
      clientId: `e2e-secure-${randomUUID()}`,
      backoffBaseMs: 5,
      backoffMaxMs: 20,
      maxAttempts,
      sessionTimeoutMs: 6_000,
      heartbeatIntervalMs: 300,
    });
    buses.push(bus);
    return bus;
  };

  before(async function () {
    broker = await requireSecureKafkaBroker(this, (found) => {
      broker = found;
      return fromSettings(saslSettings('scram-sha-512'));
    });
  });

  afterEach(async () => {
    await Promise.all(buses.splice(0).map((bus) => bus.close()));
  });

  /** Publishes two messages on a fresh topic and waits for a consumer of the same bus to handle both. */
  const roundTrip = async (bus: KafkaBus): Promise<void> => {
    const topic = `e2e-secure-${randomUUID()}`;
    const handled: BusMessage<{ seq: number }>[] = [];
    await bus.subscribe<{ seq: number }>({ topic, group: `g-${randomUUID()}`, handler: async (message) => void handled.push(message) });
    const ids = [await bus.publish(topic, 'a', { seq: 1 }), await bus.publish(topic, 'b', { seq: 2 })];
    await waitUntil(() => ids.every((id) => handled.some((message) => message.id === id)), 'both messages are handled', PATIENCE);
    expect(handled.map(({ key, value }) => ({ key, value })).sort((x, y) => x.value.seq - y.value.seq)).to.deep.equal([
      { key: 'a', value: { seq: 1 } },
      { key: 'b', value: { seq: 2 } },
    ]);
  };

  describe('SASL_SSL with SCRAM-SHA-512', () => {
    // The whole contract, over TLS with SCRAM: every connection of the bus (producer, admin, each
    // consumer and ownership member) authenticates.
    describeMessageBusContract('KafkaBus over SASL_SSL (scram-sha-512)', ({ maxAttempts }) => openBus(saslSettings('scram-sha-512'), maxAttempts), { patienceMs: PATIENCE });
  });

  for (const mechanism of ['plain', 'scram-sha-256', 'SCRAM-SHA-512']) {
    it(`given KAFKA_SASL_MECHANISM=${mechanism} over KAFKA_SSL with the broker's CA, when the bus publishes and consumes, then the messages arrive`, async () => {
      await roundTrip(openBus(saslSettings(mechanism)));
    });
  }

  it('given the Kafka bus over SASL_SSL, when the domain-events producer sends records, then a consumer with the same settings reads them', async () => {
    const topic = `domain-events-${randomUUID()}`;
    const settings = fromSettings(saslSettings('scram-sha-256'));
    const sink = await kafkaDomainEventSink({ ...settings, clientId: `publisher-${randomUUID()}`, topic });
    let reader: Consumer | null = null;
    try {
      await sink.send([{ key: 'task-1', value: '{"position":1}' }, { key: 'task-2', value: '{"position":2}' }]);
      const read: string[] = [];
      reader = new Kafka({ clientId: `analyst-${randomUUID()}`, brokers: settings.brokers, ...settings.security, logLevel: logLevel.NOTHING }).consumer({ groupId: `analyst-${randomUUID()}`, maxWaitTimeInMs: 500 });
      await reader.connect();
      await reader.subscribe({ topics: [topic], fromBeginning: true });
      await reader.run({ eachMessage: async ({ message }) => void read.push(String(message.key)) });
      await waitUntil(() => read.length >= 2, 'both records are read', PATIENCE);
      expect([...read].sort()).to.deep.equal(['task-1', 'task-2']);
    } finally {
      await reader?.disconnect();
      await sink.close();
    }
  });

  it('given a wrong KAFKA_SASL_PASSWORD, when the bus publishes, then it fails saying authentication failed, and the password is not in the message', async () => {
    const wrong = `wrong-${randomUUID()}`;
    for (const mechanism of ['scram-sha-512', 'plain']) {
      const bus = openBus(saslSettings(mechanism, { KAFKA_SASL_PASSWORD: wrong }));
      const error = await bus.publish(`e2e-secure-${randomUUID()}`, 'a', { seq: 1 }).then(
        () => null,
        (failure: unknown) => failure as Error,
      );
      expect(error, mechanism).to.be.instanceOf(Error);
      expect(error?.message, mechanism).to.match(/SASL (SCRAM SHA512|PLAIN) authentication failed/);
      expect(error?.message, mechanism).not.to.include(wrong);
    }
  });

  it('given a user the broker does not know, when the bus publishes, then it fails saying authentication failed', async () => {
    const bus = openBus(saslSettings('scram-sha-256', { KAFKA_SASL_USERNAME: `nobody-${randomUUID()}` }));
    await expectFailure(bus, /SASL SCRAM SHA256 authentication failed/);
  });

  it('given a plaintext client (no KAFKA_SSL, no SASL), when it connects to the SASL_SSL listener, then the broker refuses it', async () => {
    const bus = openBus(saslSettings('plain', { KAFKA_SSL: undefined, KAFKA_SSL_CA_FILE: undefined, KAFKA_SASL_MECHANISM: undefined, KAFKA_SASL_USERNAME: undefined, KAFKA_SASL_PASSWORD: undefined }));
    await expectFailure(bus, /Closed connection|ECONNRESET/);
  });

  it('given SCRAM without KAFKA_SSL, when the bus connects to the SASL_SSL listener, then the broker refuses it (the listener takes TLS only)', async () => {
    const bus = openBus(saslSettings('scram-sha-512', { KAFKA_SSL: undefined, KAFKA_SSL_CA_FILE: undefined }));
    await expectFailure(bus, /Closed connection|ECONNRESET/);
  });

  it("given KAFKA_SSL without the broker's CA (Node's public CAs only), when the bus connects, then the certificate is refused", async () => {
    const bus = openBus(saslSettings('scram-sha-512', { KAFKA_SSL_CA_FILE: undefined }));
    await expectFailure(bus, /self-signed certificate|unable to verify|certificate/);
  });

  describe('mutual TLS (a listener that requires a client certificate)', () => {
    it('given KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE signed by the broker CA, when the bus publishes and consumes, then the messages arrive', async () => {
      await roundTrip(openBus(mtlsSettings()));
    });

    it('given no client certificate, when the bus connects, then the broker refuses the handshake', async () => {
      const { KAFKA_SSL_CERT_FILE: _cert, KAFKA_SSL_KEY_FILE: _key, ...withoutCertificate } = mtlsSettings();
      await expectFailure(openBus(withoutCertificate), /certificate/);
    });
  });
});

/** The bus's first use fails with a message matching `pattern`. */
const expectFailure = async (bus: KafkaBus, pattern: RegExp): Promise<void> => {
  const error = await bus.publish(`e2e-secure-${randomUUID()}`, 'a', { seq: 1 }).then(
    () => null,
    (failure: unknown) => failure as Error,
  );
  expect(error, 'the publish fails').to.be.instanceOf(Error);
  expect(error?.message).to.match(pattern);
};
