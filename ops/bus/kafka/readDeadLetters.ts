import { randomUUID } from 'node:crypto';
import type { Admin, Kafka } from 'kafkajs';
import type { DeadLetter } from '../DeadLetter.ts';
import { deadLetterTopic, readDeadLetter } from './kafkaRecords.ts';

export interface ReadDeadLettersOptions {
  kafka: Kafka;
  admin: Admin;
  topic: string;
  group: string;
  /** Longest wait for the records present when the read began. Default 30 s. */
  timeoutMs?: number;
}

/**
 * The dead letters of `group` on `topic`: every record of `<topic>.dlq` up to its end offsets at
 * the time of the call, read by a throwaway consumer group that is deleted afterwards, so an
 * operator's read moves no offset of anyone's. In partition order, oldest first.
 */
export const readDeadLetters = async ({ kafka, admin, topic, group, timeoutMs = 30_000 }: ReadDeadLettersOptions): Promise<DeadLetter[]> => {
  const dead = deadLetterTopic(topic);
  if (!(await admin.listTopics()).includes(dead)) return [];
  /** Per partition with records, the offset after its last one. */
  const ends = new Map((await admin.fetchTopicOffsets(dead)).filter(({ high, low }) => Number(high) > Number(low)).map(({ partition, high }) => [partition, Number(high)]));
  if (ends.size === 0) return [];

  const readerGroup = `dead-letter-reader-${randomUUID()}`;
  const reader = kafka.consumer({ groupId: readerGroup, allowAutoTopicCreation: false });
  const letters = new Map<number, DeadLetter[]>();
  try {
    await reader.connect();
    await reader.subscribe({ topics: [dead], fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`Reading ${dead} took more than ${timeoutMs} ms`)), timeoutMs);
      reader
        .run({
          eachMessage: async ({ partition, message }) => {
            const letter = readDeadLetter(message, group);
            if (letter) letters.set(partition, [...(letters.get(partition) ?? []), letter]);
            if (Number(message.offset) + 1 >= (ends.get(partition) ?? 0)) ends.delete(partition);
            if (ends.size === 0) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch((error: unknown) => {
          clearTimeout(timer);
          reject(error instanceof Error ? error : new Error(String(error)));
        });
    });
  } finally {
    await reader.disconnect().catch(() => undefined);
    await admin.deleteGroups([readerGroup]).catch(() => undefined);
  }
  return [...letters.keys()].sort((a, b) => a - b).flatMap((partition) => letters.get(partition) ?? []);
};
