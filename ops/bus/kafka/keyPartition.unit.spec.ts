import { expect } from 'chai';
import { partitionOfKey } from './keyPartition.ts';

/** murmur2 of these keys as Kafka's Java client computes it (its own Utils test vectors). */
const JAVA_MURMUR2: ReadonlyArray<[string, number]> = [
  ['21', -973932308],
  ['foobar', -790332482],
  ['a-little-bit-long-string', -985981536],
  ['a-little-bit-longer-string', -1486304829],
  ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
  ['abc', 479470107],
];

describe('Kafka key partition', () => {
  it('given keys with known Java murmur2 hashes, when partitioned, then each goes where the Java default partitioner sends it', () => {
    for (const count of [1, 3, 12, 50]) {
      for (const [key, hash] of JAVA_MURMUR2) {
        expect(partitionOfKey('cron-ownership', key, count), `${key} of ${count}`).to.equal((hash & 0x7fffffff) % count);
      }
    }
  });

  it('given the same key on topics of different names, when partitioned, then the topic name does not matter', () => {
    expect(partitionOfKey('a', 'project-1', 12)).to.equal(partitionOfKey('b', 'project-1', 12));
  });

  it('given a partition count below 1, when partitioned, then a RangeError says so', () => {
    expect(() => partitionOfKey('t', 'k', 0)).to.throw(RangeError, /at least one partition/);
  });
});
