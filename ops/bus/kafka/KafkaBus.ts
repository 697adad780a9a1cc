import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel, Partitioners, type Admin, type Consumer as KafkaConsumer, type Producer } from 'kafkajs';
import type { BusMessage, Consumer, ConsumerOptions, KeyOwnership, MessageBus, OwnershipOptions } from '../../../shared/bus/MessageBus.ts';
import type { Logger } from '../../../shared/ports/Logger.ts';
import { backoffDelay } from '../backoffDelay.ts';
import type { DeadLetter, DeadLetterSource } from '../DeadLetter.ts';
import { InFlight } from '../InFlight.ts';
import { integerOption as count } from '../integerOption.ts';
import { readDeadLetters } from './readDeadLetters.ts';
import { KafkaOwnership } from './KafkaOwnership.ts';
import { PartitionLanes } from './PartitionLanes.ts';
import { kafkaLogCreator } from './kafkaLog.ts';
import { ensureTopic } from './ensureTopic.ts';
import { deadLetterRecord, deadLetterTopic, publishedRecord, receivedRecord, toBusMessage, type ReceivedRecord } from './kafkaRecords.ts';
import { messagePayload } from '../messagePayload.ts';
import type { KafkaClientSecurity } from './kafkaSecurity.ts';

export interface KafkaBusOptions {
  brokers: ReadonlyArray<string>;
  clientId: string;
  /** Partitions of each topic the bus creates (it creates the topics it uses when missing). Default 12. */
  partitions?: number;
  /** Replicas of each topic the bus creates. Default: the broker's default.replication.factor. */
  replicationFactor?: number;
  /** Wait before the first redelivery; doubles on each failure. Default 100 ms. */
  backoffBaseMs?: number;
  /** Longest wait between redeliveries. Default 5 s. */
  backoffMaxMs?: number;
  /** Attempts before a message goes to `<topic>.dlq`. Default: retry for ever. */
  maxAttempts?: number;
  /** Partitions one consumer handles at once (one message at a time each). Default 16. */
  concurrency?: number;
  /** A member silent this long is removed from its group and its partitions reassigned. Default 30 s. */
  sessionTimeoutMs?: number;
  /** How often members heartbeat, hence how soon they learn of a rebalance. Default 3 s. */
  heartbeatIntervalMs?: number;
  /** TLS and SASL of every connection (KAFKA_SSL, KAFKA_SASL_*; kafkaClientSecurity). Default: plaintext, no authentication. */
  security?: KafkaClientSecurity;
  logger?: Logger;
}

type Handler = (message: BusMessage) => Promise<void>;

interface Subscription {
  consumer: KafkaConsumer;
  /** Aborted when the consumer closes: retries waiting out a backoff stop at once. */
  closing: AbortController;
  lanes: PartitionLanes;
}

/** A delivery given up because its consumer closed: the lanes leave its offset uncommitted, so it is delivered again. */
class Abandoned extends Error {}

/**
 * The distributed mode's bus on Kafka (kafkajs), with the in-process bus's guarantees: once per
 * group (consumer groups), at least once (an offset is committed after its handler succeeded or
 * the message was dead-lettered), in order per key (a key's partition is handled one message at a
 * time; its retries hold the partition, as the in-process bus holds the key). Attempts are counted
 * by the consumer that retries, so a message redelivered after a rebalance or a restart starts
 * again at attempt 1. Partitions are handled independently (PartitionLanes): a long handler
 * holds only the records behind it on its partition. Key ownership is the group's partition
 * assignment (KafkaOwnership).
 */
export class KafkaBus implements MessageBus, DeadLetterSource {
  private readonly kafka: Kafka;
  private readonly settings: Required<Omit<KafkaBusOptions, 'brokers' | 'clientId' | 'logger' | 'replicationFactor' | 'security'>> & { replicationFactor: number };
  private readonly logger: Logger | undefined;
  private producer: Promise<Producer> | null = null;
  private admin: Promise<Admin> | null = null;
  private readonly topics = new Map<string, Promise<void>>();
  private readonly subscriptions = new Set<Subscription>();
  private readonly ownerships = new Set<KafkaOwnership>();
  private readonly inFlight = new InFlight();
  private closing: Promise<void> | null = null;

  constructor(options: KafkaBusOptions) {
    if (options.brokers.length === 0) throw new RangeError('brokers must name at least one host:port');
    this.logger = options.logger;
    this.settings = {
      partitions: count('partitions', options.partitions ?? 12, 1),
      replicationFactor: options.replicationFactor ?? -1,
      backoffBaseMs: count('backoffBaseMs', options.backoffBaseMs ?? 100, 0),
      backoffMaxMs: count('backoffMaxMs', options.backoffMaxMs ?? 5_000, 0),
      maxAttempts: count('maxAttempts', options.maxAttempts ?? Number.POSITIVE_INFINITY, 1, true),
      concurrency: count('concurrency', options.concurrency ?? 16, 1),
      sessionTimeoutMs: count('sessionTimeoutMs', options.sessionTimeoutMs ?? 30_000, 1),
      heartbeatIntervalMs: count('heartbeatIntervalMs', options.heartbeatIntervalMs ?? 3_000, 1),
    };
    this.kafka = new Kafka({
      clientId: options.clientId,
      brokers: [...options.brokers],
      ...options.security,
      logLevel: logLevel.WARN,
      logCreator: kafkaLogCreator(options.logger),
    });
  }

  async publish<T>(topic: string, key: string, value: T, headers?: Readonly<Record<string, string>>): Promise<string> {
    this.assertOpen();
    const payload = messagePayload(topic, key, value);
    const id = randomUUID();
    await this.ensureTopic(topic);
    const producer = await this.producerClient();
    await producer.send({ topic, messages: [publishedRecord(id, key, payload, new Date().toISOString(), headers)] });
    return id;
  }

  /** Resolves once the consumer has joined its group and has partitions to read. */
  async subscribe<T>(options: ConsumerOptions<T>): Promise<Consumer> {
    this.assertOpen();
    const { topic, group } = options;
    await this.ensureTopic(topic);
    const consumer = this.consumer(group);
    const closing = new AbortController();
    // Values cross the bus as JSON, untyped like Kafka records: T is the subscriber's claim about them.
    const handler: Handler = (message) => options.handler(message as BusMessage<T>);
    const lanes = new PartitionLanes({
      concurrency: this.settings.concurrency,
      handle: (partition, message) => this.deliver(topic, group, receivedRecord(topic, partition, message), handler, closing.signal),
      commit: (offsets) => consumer.commitOffsets(offsets.map(({ partition, offset }) => ({ topic, partition, offset }))),
      pause: (partition) => consumer.pause([{ topic, partitions: [partition] }]),
      resume: (partition) => consumer.resume([{ topic, partitions: [partition] }]),
      log: (level, message) => this.logger?.log({ level, category: 'CELERY', message: `kafka consumer of ${topic} (group ${group}): ${message}` }),
    });
    const subscription: Subscription = { consumer, closing, lanes };
    this.subscriptions.add(subscription);
    try {
      // Every join (the first and each rebalance) hands the lanes the member's partitions.
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => lanes.assign(payload.memberAssignment[topic] ?? []));
      const joined = firstJoin(consumer);
      // Awaited below; until then a crash must not count as an unhandled rejection.
      joined.catch(() => undefined);
      await consumer.connect();
      // A new group starts at the oldest message, or at the end when it asked for 'latest' (a process's own liveness group).
      await consumer.subscribe({ topics: [topic], fromBeginning: options.startAt !== 'latest' });
      await consumer.run({
        // Offsets are committed by the lanes once handled: kafkajs would commit what it fetched.
        autoCommit: false,
        eachMessage: async ({ partition, message }) => lanes.push(partition, message),
      });
      await joined;
    } catch (error) {
      await this.unsubscribe(subscription);
      throw error;
    }
    return { close: () => this.unsubscribe(subscription) };
  }

  async own(options: OwnershipOptions): Promise<KeyOwnership> {
    this.assertOpen();
    await this.ensureTopic(options.topic);
    const consumer = this.consumer(options.group);
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [options.topic], fromBeginning: false });
    } catch (error) {
      await consumer.disconnect().catch(() => undefined);
      throw error;
    }
    const ownership = await KafkaOwnership.join(options, {
      consumer,
      partitionCount: (topic) => this.partitionCount(topic),
      onClosed: (closed) => void this.ownerships.delete(closed),
      ...(this.logger ? { logger: this.logger } : {}),
    });
    if (this.closing) {
      // The bus closed while this member was joining: leave at once rather than keep its partitions.
      await ownership.close();
      throw new Error('The bus is closed');
    }
    this.ownerships.add(ownership);
    return ownership;
  }

  /** Reads the whole `<topic>.dlq` topic: an operator's tool, not a hot path. */
  async deadLetters(topic: string, group: string): Promise<DeadLetter[]> {
    return readDeadLetters({ kafka: this.kafka, admin: await this.adminClient(), topic, group });
  }

  /** Stops deliveries and pending retries; resolves when the handlers already running settled. */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    const subscriptions = [...this.subscriptions];
    const ownerships = [...this.ownerships];
    await Promise.allSettled([...subscriptions.map((subscription) => this.unsubscribe(subscription)), ...ownerships.map((ownership) => ownership.close())]);
    await this.inFlight.idle();
    const clients = await Promise.allSettled([this.producer, this.admin].filter((client) => client !== null));
    await Promise.allSettled(clients.flatMap((client) => (client.status === 'fulfilled' ? [client.value.disconnect()] : [])));
  }

  private async unsubscribe(subscription: Subscription): Promise<void> {
    if (!this.subscriptions.delete(subscription)) return;
    // The lanes stop starting records first, so the abort below reads as closing, not as a failure;
    // they settle (retries waiting out a backoff give up at once) and commit what was handled while
    // the consumer is still a member, and only then does it leave the group.
    const settled = subscription.lanes.close();
    subscription.closing.abort();
    await settled;
    await subscription.consumer.disconnect();
  }

  /**
   * One record, retried in place with backoff until its handler succeeds or it reaches
   * maxAttempts (then it goes to `<topic>.dlq`): its partition's later records wait, which keeps
   * each key in order. Rejects with Abandoned when the consumer closes first.
   */
  private async deliver(topic: string, group: string, record: ReceivedRecord, handler: Handler, closing: AbortSignal): Promise<void> {
    this.inFlight.begin();
    try {
      try {
        toBusMessage(topic, record, 1);
      } catch (error) {
        // A value that is not JSON (not published by this bus) fails on every attempt: bury it now.
        await this.bury(topic, group, record, 1, error);
        return;
      }
      for (let attempt = 1; ; attempt += 1) {
        if (closing.aborted) throw new Abandoned(`Consumer of ${topic} closed before the message was handled`);
        try {
          await Promise.resolve().then(() => handler(toBusMessage(topic, record, attempt)));
          return;
        } catch (error) {
          if (closing.aborted) throw new Abandoned(`Consumer of ${topic} closed while the message was failing`);
          if (attempt >= this.settings.maxAttempts) {
            await this.bury(topic, group, record, attempt, error);
            return;
          }
          await sleep(backoffDelay({ baseMs: this.settings.backoffBaseMs, maxMs: this.settings.backoffMaxMs }, attempt), undefined, { signal: closing, ref: false }).catch(() => undefined);
        }
      }
    } finally {
      this.inFlight.end();
    }
  }

  private async bury(topic: string, group: string, record: ReceivedRecord, attempt: number, error: unknown): Promise<void> {
    const dead = deadLetterTopic(topic);
    await this.ensureTopic(dead);
    const producer = await this.producerClient();
    await producer.send({ topic: dead, messages: [deadLetterRecord(topic, group, record, attempt, error, new Date().toISOString())] });
  }

  private consumer(groupId: string): KafkaConsumer {
    return this.kafka.consumer({
      groupId,
      sessionTimeout: this.settings.sessionTimeoutMs,
      heartbeatInterval: this.settings.heartbeatIntervalMs,
      // An idle fetch returns this often, which is when a member heartbeats and learns of a rebalance.
      maxWaitTimeInMs: this.settings.heartbeatIntervalMs,
      allowAutoTopicCreation: false,
    });
  }

  /** Created with the bus's partition count: a broker's auto-created topic has its default (often 1). */
  private ensureTopic(topic: string): Promise<void> {
    let ensured = this.topics.get(topic);
    if (!ensured) {
      ensured = this.adminClient().then((admin) => ensureTopic(admin, { topic, numPartitions: this.settings.partitions, replicationFactor: this.settings.replicationFactor }));
      // A failure is not remembered: the next use tries again.
      ensured.catch(() => this.topics.delete(topic));
      this.topics.set(topic, ensured);
    }
    return ensured;
  }

  private async partitionCount(topic: string): Promise<number> {
    const admin = await this.adminClient();
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    const partitions = topics.find((metadata) => metadata.name === topic)?.partitions.length ?? 0;
    if (partitions === 0) throw new Error(`Topic ${topic} has no partitions`);
    return partitions;
  }

  private producerClient(): Promise<Producer> {
    this.producer ??= connected(this.kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: false }), () => (this.producer = null));
    return this.producer;
  }

  private adminClient(): Promise<Admin> {
    this.admin ??= connected(this.kafka.admin(), () => (this.admin = null));
    return this.admin;
  }

  private assertOpen(): void {
    if (this.closing) throw new Error('The bus is closed');
  }
}

/** Resolves on the consumer's first GROUP_JOIN; rejects if it crashes before. */
const firstJoin = (consumer: KafkaConsumer): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    const removers = [
      consumer.on(consumer.events.GROUP_JOIN, () => {
        removers.forEach((remove) => remove());
        resolve();
      }),
      // A crash kafkajs restarts the consumer from (a coordinator still loading on a fresh broker,
      // a rebalance in progress) is not the end of the join: it joins after the restart. Only a
      // crash it gives up on fails the subscription.
      consumer.on(consumer.events.CRASH, ({ payload }) => {
        if (payload.restart) return;
        removers.forEach((remove) => remove());
        reject(payload.error);
      }),
    ];
  });

/** Connects a client once; a failed connection is forgotten so that the next use tries again. */
const connected = async <C extends { connect(): Promise<void> }>(client: C, forget: () => void): Promise<C> => {
  try {
    await client.connect();
    return client;
  } catch (error) {
    forget();
    throw error;
  }
};
