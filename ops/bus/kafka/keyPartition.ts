import { Partitioners, type PartitionMetadata } from 'kafkajs';

/**
 * kafkajs's own default partitioner (Java-compatible murmur2), the one the producer uses for keyed
 * messages: for a key it reads nothing of the metadata but its length, the topic's partition
 * count, so a synthetic list of that length gives the partition a keyed message would go to.
 */
const defaultPartitioner = Partitioners.DefaultPartitioner();

const partitionLists = new Map<number, PartitionMetadata[]>();

const partitionsOf = (count: number): PartitionMetadata[] => {
  let list = partitionLists.get(count);
  if (!list) {
    list = Array.from({ length: count }, (_, partitionId) => ({ partitionErrorCode: 0, partitionId, leader: 0, replicas: [0], isr: [0] }));
    partitionLists.set(count, list);
  }
  return list;
};

/** The partition of `topic` (with `partitionCount` partitions) that the producer sends `key` to. */
export const partitionOfKey = (topic: string, key: string, partitionCount: number): number => {
  if (!Number.isInteger(partitionCount) || partitionCount < 1) throw new RangeError(`A topic has at least one partition, got ${partitionCount}`);
  return defaultPartitioner({ topic, partitionMetadata: partitionsOf(partitionCount), message: { key, value: null } });
};
