import { Kafka, logLevel } from 'kafkajs';
import { containerRuntimeProblem } from './containerRuntime.ts';

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
export const probeBrokers = async (brokers: ReadonlyArray<string>): Promise<string | null> => {
  const admin = new Kafka({
    clientId: 'test-broker-probe',
    brokers: [...brokers],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5_000,
    retry: { retries: 3, initialRetryTime: 300 },
  }).admin();
  try {
    await admin.connect();
    await admin.describeCluster();
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await admin.disconnect().catch(() => undefined);
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
