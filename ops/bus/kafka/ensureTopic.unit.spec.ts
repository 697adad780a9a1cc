import { expect } from 'chai';
import { KafkaJSProtocolError, type Admin } from 'kafkajs';
import { ensureTopic } from './ensureTopic.ts';

/** An admin whose metadata reads answer `answers` in turn (an Error is thrown), the last one for ever. */
const fakeAdmin = (answers: Array<Error | Array<{ leader: number }>>) => {
  const calls = { create: 0, metadata: 0 };
  const admin = {
    createTopics: async () => {
      calls.create += 1;
      return true;
    },
    fetchTopicMetadata: async ({ topics }: { topics: string[] }) => {
      const answer = answers[Math.min(calls.metadata, answers.length - 1)];
      calls.metadata += 1;
      if (answer instanceof Error) throw answer;
      return { topics: [{ name: topics[0], partitions: (answer ?? []).map(({ leader }, partitionId) => ({ partitionId, leader })) }] };
    },
  };
  return { admin: admin as unknown as Admin, calls };
};

const unknownTopic = () => new KafkaJSProtocolError('This server does not host this topic-partition');

describe('ensureTopic', () => {
  it('given a KRaft broker that does not know the new topic yet, when ensured, then the metadata is read again until each partition has a leader', async () => {
    const { admin, calls } = fakeAdmin([unknownTopic(), unknownTopic(), [{ leader: -1 }, { leader: 1 }], [{ leader: 1 }, { leader: 1 }]]);
    await ensureTopic(admin, { topic: 't', numPartitions: 2 });
    expect(calls).to.deep.equal({ create: 1, metadata: 4 });
  });

  it('given a topic that never gets a leader, when the time is up, then the last error is thrown', async () => {
    const { admin } = fakeAdmin([unknownTopic()]);
    const failed = await ensureTopic(admin, { topic: 't', numPartitions: 2, timeoutMs: 250 }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failed).to.be.instanceOf(KafkaJSProtocolError);
  });
});
