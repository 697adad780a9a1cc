import { randomUUID } from 'node:crypto';
import { requireKafkaBroker } from '../../../test/support/kafkaBroker.ts';
import { describeMessageBusContract } from '../messageBusContract.ts';
import { KafkaBus } from './KafkaBus.ts';

/**
 * The bus contract against a real broker: TEST_KAFKA_BROKERS (.ci/run starts one with .ci/kafka),
 * else a testcontainers broker, else skipped with the reason printed (failed in CI). Topics and
 * groups are unique per test, so reruns and other runs on the same broker do not collide.
 */
describe('KafkaBus against a Kafka broker', function () {
  this.timeout(300_000);
  let brokers: string[] = [];

  before(async function () {
    ({ brokers } = await requireKafkaBroker(this));
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
    // Group joins and rebalances on a loaded 2-core machine: generous.
    { patienceMs: 30_000 },
  );
});
