import { Kafka, logLevel, type Admin } from 'kafkajs';
import { containerRuntimeProblem } from './containerRuntime.ts';
import type { KafkaClientSecurity } from '../../ops/bus/kafka/kafkaSecurity.ts';

/**
 * Which Kafka broker the Kafka specs talk to, decided in one place:
 * 1. TEST_KAFKA_BROKERS (host:port, comma-separated): a live broker, normally the one `.ci/kafka
 *    start` runs on 127.0.0.1:19092 (.ci/run starts it and sets the variable). Set but unreachable
 *    is a failure, not a skip: someone said a broker is there.
 * 2. Else a container runtime (Docker) reachable by testcontainers: a broker in a container,
 *    started once per test process and removed by testcontainers' reaper when the process ends.
 * 3. Else the suite is skipped with the reason printed, except in CI (CI=true), where it fails:
 *    CI starts a broker, so a missing one is a broken build, not a reason to pass.
 *
 * TEST_KAFKA_BROKERS and not KAFKA_BROKERS: the service's config reads KAFKA_BROKERS and would
 * switch every service a spec starts to the Kafka bus.
 */
export const TEST_KAFKA_BROKERS = 'TEST_KAFKA_BROKERS';

/** A Confluent image of the Kafka 4 line, the line `.ci/kafka` runs (Confluent Platform 8.0 is Kafka 4.0). */
const KAFKA_IMAGE = 'confluentinc/cp-kafka:8.0.0';

export interface KafkaBroker {
  /** Bootstrap addresses, host:port. */
  brokers: string[];
  /** Where they come from, for a spec's title or log. */
  source: 'TEST_KAFKA_BROKERS' | 'testcontainers';
}

const inCi = (): boolean => process.env.CI === 'true' || process.env.CI === '1';

/** The addresses in TEST_KAFKA_BROKERS, or null when it is unset or blank. */
export const brokersFromEnv = (env: NodeJS.ProcessEnv = process.env): string[] | null => {
  const text = env[TEST_KAFKA_BROKERS]?.trim();
  if (!text) return null;
  const brokers = text.split(',').map((broker) => broker.trim()).filter((broker) => broker.length > 0);
  for (const broker of brokers) {
    if (!/^[^:\s]+:\d{1,5}$/.test(broker)) throw new Error(`${TEST_KAFKA_BROKERS} must be host:port, comma-separated; got "${text}"`);
  }
  return brokers;
};

/** Null when the brokers answer a metadata request within a few seconds, else why not. */
export const probeBrokers = async (brokers: ReadonlyArray<string>, security: KafkaClientSecurity = {}): Promise<string | null> => {
  const admin = new Kafka({
    clientId: 'test-broker-probe',
    brokers: [...brokers],
    ...security,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5_000,
    retry: { retries: 3, initialRetryTime: 300 },
  }).admin();
  try {
    await admin.connect();
    await admin.describeCluster();
    await warmGroupCoordinator(admin);
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
};

/**
 * A fresh broker (each `.ci/kafka start` formats a new one) creates and loads its group coordinator
 * (__consumer_offsets) on the first group request, and a consumer joining meanwhile crashes with
 * "The coordinator is loading" rather than waiting. Asked for here, so that a spec's first join
 * finds it loaded: a group lookup, repeated until it answers (a minute at most).
 */
const warmGroupCoordinator = async (admin: Admin): Promise<void> => {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await admin.describeGroups(['test-broker-probe']);
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
};

let container: Promise<string[]> | null = null;

/** One broker container per test process, or null (with the reason) when no runtime is reachable. */
const containerBrokers = async (): Promise<{ brokers: string[] } | { problem: string }> => {
  const problem = await containerRuntimeProblem();
  if (problem !== null) return { problem };
  container ??= (async () => {
    const { KafkaContainer } = await import('@testcontainers/kafka');
    const started = await new KafkaContainer(KAFKA_IMAGE).withKraft().start();
    return [`${started.getHost()}:${started.getMappedPort(9093)}`];
  })();
  // A failed start is not remembered: the next suite tries again.
  container.catch(() => (container = null));
  return { brokers: await container };
};

/**
 * Call in a `before` hook (give it a few minutes: a container may have to be pulled). Resolves to
 * the brokers to use, or skips the suite with the reason printed; fails instead of skipping in CI
 * and when TEST_KAFKA_BROKERS names a broker that does not answer.
 */
export async function requireKafkaBroker(context: Mocha.Context): Promise<KafkaBroker> {
  const fromEnv = brokersFromEnv();
  if (fromEnv) {
    const problem = await probeBrokers(fromEnv);
    if (problem !== null) {
      throw new Error(`${TEST_KAFKA_BROKERS}=${fromEnv.join(',')} does not answer (${problem}): start it with '.ci/kafka start', or unset the variable`);
    }
    return { brokers: fromEnv, source: 'TEST_KAFKA_BROKERS' };
  }
  const found = await containerBrokers();
  if ('brokers' in found) return { brokers: found.brokers, source: 'testcontainers' };
  const message = `no Kafka broker: ${TEST_KAFKA_BROKERS} is unset and ${found.problem}`;
  if (inCi()) throw new Error(`${message}. CI needs one: .ci/run starts it with .ci/kafka and sets ${TEST_KAFKA_BROKERS}`);
  console.log(`      skipped: ${message}; run '.ci/kafka start' and export ${TEST_KAFKA_BROKERS}=$(.ci/kafka brokers)`);
  context.skip();
}

/**
 * The secure listeners of the `.ci/kafka` broker, from the variables `.ci/kafka env` prints (.ci/run
 * exports them): SASL over TLS (a CA file, one user for PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512) and
 * mutual TLS (a client certificate and key signed by the same CA). Paths and the password, as the
 * service's KAFKA_SSL_* and KAFKA_SASL_* settings take them.
 */
export interface SecureKafkaBroker {
  saslSsl: { brokers: string[]; caFile: string; username: string; password: string };
  mtls: { brokers: string[]; caFile: string; certFile: string; keyFile: string };
}

export const SECURE_KAFKA_VARIABLES = [
  'TEST_KAFKA_SASL_SSL_BROKERS',
  'TEST_KAFKA_CA_FILE',
  'TEST_KAFKA_SASL_USERNAME',
  'TEST_KAFKA_SASL_PASSWORD',
  'TEST_KAFKA_MTLS_BROKERS',
  'TEST_KAFKA_CLIENT_CERT_FILE',
  'TEST_KAFKA_CLIENT_KEY_FILE',
] as const;

/** The secure listeners named by the environment, null when none is named; some but not all is an error. */
export const secureBrokerFromEnv = (env: NodeJS.ProcessEnv = process.env): SecureKafkaBroker | null => {
  const value = (name: (typeof SECURE_KAFKA_VARIABLES)[number]) => env[name]?.trim() ?? '';
  const missing = SECURE_KAFKA_VARIABLES.filter((name) => value(name) === '');
  if (missing.length === SECURE_KAFKA_VARIABLES.length) return null;
  if (missing.length > 0) throw new Error(`${missing.join(', ')} unset while the other TEST_KAFKA_* of the secure listeners are set: eval "$(.ci/kafka env)" sets them all`);
  const brokers = (name: 'TEST_KAFKA_SASL_SSL_BROKERS' | 'TEST_KAFKA_MTLS_BROKERS') => brokersFromEnv({ [TEST_KAFKA_BROKERS]: value(name) }) ?? [];
  return {
    saslSsl: { brokers: brokers('TEST_KAFKA_SASL_SSL_BROKERS'), caFile: value('TEST_KAFKA_CA_FILE'), username: value('TEST_KAFKA_SASL_USERNAME'), password: value('TEST_KAFKA_SASL_PASSWORD') },
    mtls: { brokers: brokers('TEST_KAFKA_MTLS_BROKERS'), caFile: value('TEST_KAFKA_CA_FILE'), certFile: value('TEST_KAFKA_CLIENT_CERT_FILE'), keyFile: value('TEST_KAFKA_CLIENT_KEY_FILE') },
  };
};

/**
 * Call in a `before` hook: the secure listeners, probed with `probe` (the caller's security for
 * them), or the suite skipped with the reason printed. Failed instead in CI (.ci/run starts the
 * broker with them) and when the variables name a listener that does not answer. No container
 * fallback: the certificates and users are made by `.ci/kafka`.
 */
export async function requireSecureKafkaBroker(context: Mocha.Context, probe: (broker: SecureKafkaBroker) => { brokers: string[]; security: KafkaClientSecurity }): Promise<SecureKafkaBroker> {
  const broker = secureBrokerFromEnv();
  if (broker) {
    const { brokers, security } = probe(broker);
    const problem = await probeBrokers(brokers, security);
    if (problem !== null) throw new Error(`the secure Kafka listener ${brokers.join(',')} does not answer (${problem}): '.ci/kafka stop && .ci/kafka start', then eval "$(.ci/kafka env)"`);
    return broker;
  }
  const message = 'no secure Kafka listener: TEST_KAFKA_SASL_SSL_BROKERS and the other variables of `.ci/kafka env` are unset';
  if (inCi()) throw new Error(`${message}. CI needs them: .ci/run starts the broker with .ci/kafka and exports them`);
  console.log(`      skipped: ${message}; run '.ci/kafka start' and eval "$(.ci/kafka env)"`);
  context.skip();
}
