/**
 * The live broker `.ci/kafka start` runs (TEST_KAFKA_BROKERS, set by .ci/run), or why there is none.
 * With CI=true a missing broker is an error, not a skip: CI must run the Kafka suites.
 */
export const liveKafkaBrokers = (): { brokers: string; reason?: never } | { brokers: null; reason: string } => {
  const brokers = process.env.TEST_KAFKA_BROKERS?.trim();
  if (brokers) return { brokers };
  if (process.env.CI === 'true') throw new Error('CI=true but TEST_KAFKA_BROKERS is not set: .ci/run starts the broker with .ci/kafka start');
  return { brokers: null, reason: 'no live Kafka broker (start one with `.ci/kafka start` and set TEST_KAFKA_BROKERS=$(.ci/kafka brokers))' };
};
