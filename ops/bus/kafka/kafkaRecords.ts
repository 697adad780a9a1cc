import type { IHeaders, KafkaMessage, Message } from 'kafkajs';
import type { BusMessage } from '../../../shared/bus/MessageBus.ts';
import type { DeadLetter } from '../DeadLetter.ts';

/**
 * How bus messages and dead letters are laid out in Kafka records: the key is the message key,
 * the value its JSON text, and what the port adds (id, publishedAt, the dead letter's facts)
 * travels in headers, so that any Kafka tool reads the value as published.
 */
const ID = 'bus-id';
const PUBLISHED_AT = 'bus-published-at';
const GROUP = 'dlq-group';
const ATTEMPT = 'dlq-attempt';
const ERROR = 'dlq-error';
const FAILED_AT = 'dlq-failed-at';
const TOPIC = 'dlq-topic';

/** Dead letters of every group consuming `topic` go to one topic beside it. */
export const deadLetterTopic = (topic: string): string => `${topic}.dlq`;

/** The port's own headers, and the headers a publisher adds (trace context: `traceparent`). */
const OWN_HEADERS = new Set([ID, PUBLISHED_AT, GROUP, ATTEMPT, ERROR, FAILED_AT, TOPIC]);

export const publishedRecord = (id: string, key: string, payload: string, publishedAt: string, extra?: Readonly<Record<string, string>>): Message => ({
  key,
  value: payload,
  // The port's own headers win: a publisher cannot forge a message's id or time.
  headers: { ...extra, [ID]: id, [PUBLISHED_AT]: publishedAt },
});

/** A record's headers other than the port's own, as text. */
const extraHeaders = (headers: IHeaders | undefined): Record<string, string> | undefined => {
  if (headers === undefined) return undefined;
  const found: Record<string, string> = {};
  for (const name of Object.keys(headers)) {
    if (OWN_HEADERS.has(name)) continue;
    const value = header(headers, name);
    if (value !== undefined) found[name] = value;
  }
  return Object.keys(found).length === 0 ? undefined : found;
};

const header = (headers: IHeaders | undefined, name: string): string | undefined => {
  const raw = headers?.[name];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value === undefined ? undefined : value.toString();
};

/** What the record says, before any delivery: its value stays text until parsed for a handler. */
export interface ReceivedRecord {
  id: string;
  key: string;
  payload: string;
  publishedAt: string;
  headers?: Record<string, string>;
}

/** A record not written by this bus (no id header) is taken with its offset as id. */
export const receivedRecord = (topic: string, partition: number, message: KafkaMessage): ReceivedRecord => ({
  id: header(message.headers, ID) ?? `${topic}/${partition}/${message.offset}`,
  key: message.key?.toString() ?? '',
  payload: message.value?.toString() ?? 'null',
  publishedAt: header(message.headers, PUBLISHED_AT) ?? new Date(Number(message.timestamp)).toISOString(),
  ...(extraHeaders(message.headers) === undefined ? {} : { headers: extraHeaders(message.headers) }),
});

/** Each delivery parses its own copy, as in the in-process bus. Throws when the value is not JSON. */
export const toBusMessage = (topic: string, record: ReceivedRecord, attempt: number): BusMessage => ({
  id: record.id,
  topic,
  key: record.key,
  value: JSON.parse(record.payload) as unknown,
  publishedAt: record.publishedAt,
  attempt,
  ...(record.headers === undefined ? {} : { headers: record.headers }),
});

export const deadLetterRecord = (topic: string, group: string, record: ReceivedRecord, attempt: number, error: unknown, failedAt: string): Message => ({
  key: record.key,
  value: record.payload,
  headers: {
    [ID]: record.id,
    [PUBLISHED_AT]: record.publishedAt,
    [TOPIC]: topic,
    [GROUP]: group,
    [ATTEMPT]: String(attempt),
    [ERROR]: error instanceof Error ? error.message : String(error),
    [FAILED_AT]: failedAt,
  },
});

/** The dead letter a record of a dead-letter topic holds, when it is one of `group`'s. */
export const readDeadLetter = (message: KafkaMessage, group: string): DeadLetter | null => {
  if (header(message.headers, GROUP) !== group) return null;
  const payload = message.value?.toString() ?? 'null';
  let value: unknown;
  try {
    value = JSON.parse(payload) as unknown;
  } catch {
    value = payload; // A poison record that was not JSON is kept as its text.
  }
  return {
    message: {
      id: header(message.headers, ID) ?? '',
      topic: header(message.headers, TOPIC) ?? '',
      key: message.key?.toString() ?? '',
      value,
      publishedAt: header(message.headers, PUBLISHED_AT) ?? '',
      attempt: Number(header(message.headers, ATTEMPT) ?? '0'),
    },
    error: header(message.headers, ERROR) ?? '',
    failedAt: header(message.headers, FAILED_AT) ?? '',
  };
};
