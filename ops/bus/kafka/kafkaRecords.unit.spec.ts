import { expect } from 'chai';
import type { IHeaders, KafkaMessage, Message } from 'kafkajs';
import { deadLetterRecord, publishedRecord, readDeadLetter, receivedRecord, toBusMessage } from './kafkaRecords.ts';

/** What a consumer gets back for a record the producer sent: key, value and headers as Buffers. */
const asReceived = (record: Message, offset: string): KafkaMessage => {
  const headers: IHeaders = {};
  for (const [name, value] of Object.entries(record.headers ?? {})) {
    if (typeof value === 'string') headers[name] = Buffer.from(value);
  }
  return {
    key: record.key === undefined || record.key === null ? null : Buffer.from(record.key),
    value: record.value === null ? null : Buffer.from(record.value),
    timestamp: String(Date.parse('2024-06-10T12:00:00.000Z')),
    attributes: 0,
    offset,
    headers,
  };
};

describe('Kafka records of the bus', () => {
  it('given a published record, when received, then the bus message has its id, key, JSON value, publishedAt and the attempt', () => {
    const sent = publishedRecord('m-1', 'project-7', JSON.stringify({ seq: 3 }), '2024-06-10T12:00:01.000Z');
    const received = receivedRecord('tasks', 2, asReceived(sent, '41'));
    expect(toBusMessage('tasks', received, 2)).to.deep.equal({
      id: 'm-1',
      topic: 'tasks',
      key: 'project-7',
      value: { seq: 3 },
      publishedAt: '2024-06-10T12:00:01.000Z',
      attempt: 2,
    });
  });

  it('given a record of another producer (no bus headers), when received, then its position is its id and its timestamp its publishedAt', () => {
    const received = receivedRecord('tasks', 2, asReceived({ key: 'k', value: '"v"' }, '41'));
    expect(received).to.deep.equal({ id: 'tasks/2/41', key: 'k', payload: '"v"', publishedAt: '2024-06-10T12:00:00.000Z' });
  });

  it('given a dead-letter record of a group, when read for that group, then it is the dead letter; for another group, nothing', () => {
    const received = receivedRecord('tasks', 0, asReceived(publishedRecord('m-2', 'k', '{"seq":0}', '2024-06-10T12:00:02.000Z'), '7'));
    const dead = asReceived(deadLetterRecord('tasks', 'workers', received, 3, new Error('poison 3'), '2024-06-10T12:00:05.000Z'), '0');
    expect(readDeadLetter(dead, 'workers')).to.deep.equal({
      message: { id: 'm-2', topic: 'tasks', key: 'k', value: { seq: 0 }, publishedAt: '2024-06-10T12:00:02.000Z', attempt: 3 },
      error: 'poison 3',
      failedAt: '2024-06-10T12:00:05.000Z',
    });
    expect(readDeadLetter(dead, 'other')).to.equal(null);
  });

  it('given a value that is not JSON, when delivered, then parsing throws; as a dead letter it is kept as text', () => {
    const received = receivedRecord('tasks', 0, asReceived({ key: 'k', value: 'not json' }, '3'));
    expect(() => toBusMessage('tasks', received, 1)).to.throw(SyntaxError);
    const dead = asReceived(deadLetterRecord('tasks', 'g', received, 1, new SyntaxError('bad'), '2024-06-10T12:00:05.000Z'), '0');
    expect(readDeadLetter(dead, 'g')?.message.value).to.equal('not json');
  });
});
