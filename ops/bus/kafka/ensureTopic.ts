import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin } from 'kafkajs';

export interface EnsureTopicOptions {
  topic: string;
  numPartitions: number;
  /** -1: the broker's default.replication.factor. */
  replicationFactor?: number;
  /** Longest wait for every partition to have a leader. Default 30 s. */
  timeoutMs?: number;
}

/**
 * Creates `topic` when it is missing and resolves once every partition has a leader. Not kafkajs's
 * `waitForLeaders`: it retries only LEADER_NOT_AVAILABLE, while a KRaft broker (Kafka 4) answers a
 * metadata read of a topic its controller has just created with UNKNOWN_TOPIC_OR_PARTITION until
 * the broker has caught up, which kafkajs then throws (a service's first start against a fresh
 * broker failed so). Any error is retried here until the time is up, then the last one is thrown.
 */
export const ensureTopic = async (admin: Admin, { topic, numPartitions, replicationFactor = -1, timeoutMs = 30_000 }: EnsureTopicOptions): Promise<void> => {
  // false when it exists already (the broker's TOPIC_ALREADY_EXISTS is not an error to kafkajs).
  await admin.createTopics({ waitForLeaders: false, topics: [{ topic, numPartitions, replicationFactor }] });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let problem: unknown = null;
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
      const partitions = topics.find((metadata) => metadata.name === topic)?.partitions ?? [];
      if (partitions.length > 0 && partitions.every((partition) => partition.leader >= 0)) return;
    } catch (error) {
      problem = error;
    }
    if (Date.now() >= deadline) {
      throw problem instanceof Error ? problem : new Error(`Topic ${topic} has no leader for each partition after ${timeoutMs} ms`);
    }
    await sleep(100);
  }
};
