import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel, Partitioners, type Message, type Producer } from 'kafkajs';
import { START, type EventStore, type Position, type RecordedEvent, type Subscription } from '../../../shared/event-store/EventStore.ts';
import type { Logger } from '../../../shared/ports/Logger.ts';
import type { BusConfig } from '../../config.ts';
import { join } from 'node:path';
import { toEnvelope } from '../../../query-side/events/eventEnvelope.ts';
import { kafkaLogCreator } from './kafkaLog.ts';
import { ensureTopic } from './ensureTopic.ts';
import type { KafkaClientSecurity } from './kafkaSecurity.ts';
import { PUBLISH_CHECKPOINT_FILE } from './publishCheckpointFile.ts';

/** The topic analysts attach their own consumers to (docs/events.md). */
export const DOMAIN_EVENTS_TOPIC = 'domain-events';

/**
 * One event as a Kafka record: keyed by its (served) stream id, so a stream's events stay in order
 * on one partition; the value is exactly the envelope GET /events serves, redacted the same way.
 * The global position travels in a header too: it is the dedupe key (delivery is at-least-once).
 */
export const domainEventRecord = (event: RecordedEvent): Message => {
  const envelope = toEnvelope(event);
  return {
    key: envelope.stream,
    value: JSON.stringify(envelope),
    headers: { 'event-type': envelope.type, 'event-position': String(envelope.position) },
  };
};

/** Where records go: Kafka in production, an array in tests. */
export interface DomainEventSink {
  send(records: Message[]): Promise<void>;
  close(): Promise<void>;
}

/** The last published position, kept in a file beside the log so that a restart resumes there. */
export interface PublishCheckpoint {
  read(): Position;
  write(position: Position): void;
}

export const fileCheckpoint = (file: string): PublishCheckpoint => ({
  read: () => {
    try {
      const text = readFileSync(file, 'utf8').trim();
      return /^\d+$/.test(text) ? BigInt(text) : START;
    } catch {
      return START;
    }
  },
  write: (position) => {
    // Written aside and renamed: a crash leaves the old checkpoint or the new one, never half.
    writeFileSync(`${file}.tmp`, `${position}\n`, { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  },
});

export interface DomainEventPublisher {
  close(): Promise<void>;
}

const BATCH = 500;
/** Events read from the log but not yet acknowledged by the sink: reading pauses beyond this. */
const MAX_UNSENT = 2 * BATCH;

/**
 * Follows the log from the checkpoint and sends every event to the sink in batches, in log order.
 * At-least-once: the checkpoint is written after the sink acknowledged a batch, so a crash in
 * between republishes that batch on restart; consumers dedupe on the position.
 */
export const publishDomainEvents = (deps: {
  eventStore: EventStore;
  sink: DomainEventSink;
  checkpoint: PublishCheckpoint;
  logger?: Logger;
  /** Waiting before a failed batch is sent again. */
  retryDelayMs?: number;
}): DomainEventPublisher => {
  const { eventStore, sink, checkpoint, logger, retryDelayMs = 1000 } = deps;
  let closed = false;
  let batch: RecordedEvent[] = [];
  let unsent = 0;
  let sending: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;

  const send = async (events: RecordedEvent[]): Promise<void> => {
    const records = events.map(domainEventRecord);
    for (;;) {
      if (closed) return;
      try {
        await sink.send(records);
        break;
      } catch (error) {
        logger?.log({ level: 'error', category: 'CELERY', message: `Publishing to ${DOMAIN_EVENTS_TOPIC} failed, retrying: ${String(error)}` });
        await sleep(retryDelayMs);
      }
    }
    const last = events.at(-1);
    if (last) checkpoint.write(last.position);
    unsent -= events.length;
  };

  const flush = (): Promise<void> => {
    clearTimeout(timer);
    timer = undefined;
    const events = batch;
    batch = [];
    if (events.length > 0) sending = sending.then(() => send(events));
    return sending;
  };

  const subscription: Subscription = eventStore.subscribeToAll({
    after: checkpoint.read(),
    onEvent: async (event) => {
      batch.push(event);
      unsent += 1;
      if (batch.length >= BATCH) await flush();
      // A live event is sent within a few milliseconds rather than waiting for a full batch.
      else timer ??= setTimeout(() => void flush(), 5);
      if (unsent >= MAX_UNSENT) await sending;
    },
    onError: (error) => logger?.log({ level: 'critical', category: 'CELERY', message: `Domain event publisher stopped: ${String(error)}` }),
  });

  return {
    async close() {
      // What is not acknowledged by now is not checkpointed either: the next start sends it.
      closed = true;
      clearTimeout(timer);
      await subscription.close();
      await sending;
      await sink.close();
    },
  };
};

/**
 * A producer of the `domain-events` topic (created with 12 partitions when absent). `topic` is for
 * tests that share a broker; `security` is the bus's TLS and SASL; kafkajs's log lines go to `logger`.
 */
export const kafkaDomainEventSink = async (options: {
  brokers: ReadonlyArray<string>;
  clientId: string;
  partitions?: number;
  topic?: string;
  security?: KafkaClientSecurity;
  logger?: Logger;
}): Promise<DomainEventSink> => {
  const topic = options.topic ?? DOMAIN_EVENTS_TOPIC;
  const kafka = new Kafka({
    clientId: `${options.clientId}-domain-events`,
    brokers: [...options.brokers],
    ...options.security,
    logLevel: logLevel.WARN,
    logCreator: kafkaLogCreator(options.logger),
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    await ensureTopic(admin, { topic, numPartitions: options.partitions ?? 12 });
  } finally {
    await admin.disconnect();
  }
  // Idempotent: kafkajs retries a Produce request whole, so a batch whose request failed for one
  // partition (a new topic's partition whose leader is not ready yet, say) was written again on the
  // others; with a producer id and sequence numbers the broker drops those repeats. Retries stay
  // bounded (kafkajs's default for an idempotent producer is for ever): close must not hang on a
  // broker that is gone; what is given up is sent again by the publisher (at least once).
  const producer: Producer = kafka.producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    allowAutoTopicCreation: false,
    idempotent: true,
    maxInFlightRequests: 1,
    retry: { retries: 5 },
  });
  await producer.connect();
  return {
    send: async (messages) => {
      await producer.send({ topic, messages });
    },
    close: () => producer.disconnect(),
  };
};

/**
 * The service's choice: with the Kafka bus, the `domain-events` publisher (checkpoint in DATA_DIR),
 * connecting with the bus's `security`; with the in-process bus, nothing at all (no sink is even created).
 */
export const startDomainEventPublishing = async (
  bus: BusConfig,
  deps: {
    eventStore: EventStore;
    dataDir: string;
    security?: KafkaClientSecurity;
    logger?: Logger;
    sinkFor?: (brokers: ReadonlyArray<string>, clientId: string) => Promise<DomainEventSink>;
  },
): Promise<DomainEventPublisher | null> => {
  if (bus.kind !== 'kafka') return null;
  // KAFKA_TOPIC_PREFIX names this deployment's topics, domain-events included.
  const topic = `${bus.topicPrefix}${DOMAIN_EVENTS_TOPIC}`;
  const sinkFor = deps.sinkFor ?? ((brokers, clientId) => kafkaDomainEventSink({ brokers, clientId, topic, ...(deps.security ? { security: deps.security } : {}), ...(deps.logger ? { logger: deps.logger } : {}) }));
  return publishDomainEvents({
    eventStore: deps.eventStore,
    sink: await sinkFor(bus.brokers, bus.clientId),
    checkpoint: fileCheckpoint(join(deps.dataDir, PUBLISH_CHECKPOINT_FILE)),
    ...(deps.logger ? { logger: deps.logger } : {}),
  });
};
