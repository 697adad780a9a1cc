import { randomUUID } from 'node:crypto';
import { describeMessageBusContract } from '../messageBusContract.ts';
import { KafkaBus } from './KafkaBus.ts';

/** A KRaft broker (no ZooKeeper); the version kafkajs 2.2 is known to speak to. */
const KAFKA_IMAGE = 'confluentinc/cp-kafka:7.9.1';

/**
 * The bus contract against a real broker started by testcontainers. Without a reachable container
 * runtime (no Docker engine), the suite is skipped with the reason printed, in CI too: CI=true
 * only makes the PostgreSQL and MariaDB tests mandatory.
 */
describe('KafkaBus against Kafka (testcontainers)', function () {
  this.timeout(300_000);
  let brokers: string[] = [];
  let stopKafka: (() => Promise<unknown>) | null = null;

  before(async function () {
    const { getContainerRuntimeClient } = await import('testcontainers');
    try {
      await getContainerRuntimeClient();
    } catch (error) {
      console.log(`      skipped: no container runtime is reachable for a Kafka broker (${error instanceof Error ? error.message : String(error)})`);
      this.skip();
    }
    const { KafkaContainer } = await import('@testcontainers/kafka');
    const kafka = await new KafkaContainer(KAFKA_IMAGE).withKraft().start();
    brokers = [`${kafka.getHost()}:${kafka.getMappedPort(9093)}`];
    stopKafka = () => kafka.stop();
  });

  after(async () => {
    await stopKafka?.();
  });

  describeMessageBusContract(
    'KafkaBus',
    ({ maxAttempts }) =>
      new KafkaBus({
        brokers,
        clientId: `contract-${randomUUID()}`,
        backoffBaseMs: 5,
        backoffMaxMs: 20,
        maxAttempts,
        // The broker's minimum session; frequent heartbeats so members learn of rebalances quickly.
        sessionTimeoutMs: 6_000,
        heartbeatIntervalMs: 300,
      }),
    { patienceMs: 30_000 },
  );
});
