import { randomUUID } from 'node:crypto';
import type { BusMessage, Consumer, ConsumerOptions, KeyOwnership, MessageBus, OwnershipOptions } from '../../shared/bus/MessageBus.ts';
import { systemClock, type Clock } from '../../shared/clock.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import { ConsumerGroup, type DeliverySettings } from './ConsumerGroup.ts';
import { integerOption as count } from './integerOption.ts';
import type { DeadLetter, DeadLetterSource } from './DeadLetter.ts';
import { TopicLog } from './TopicLog.ts';
import { messagePayload } from './messagePayload.ts';

export interface InProcessBusOptions {
  /** Wait before the first redelivery; doubles on each failure. Default 100 ms. */
  backoffBaseMs?: number;
  /** Longest wait between redeliveries. Default 5 s. */
  backoffMaxMs?: number;
  /** Attempts before a message is dead-lettered. Default: retry for ever. */
  maxAttempts?: number;
  /** Handlers of distinct keys run at once by one consumer. Default 16. */
  concurrency?: number;
  /** Messages kept per topic for groups that subscribe later. Default 100,000. */
  retentionPerTopic?: number;
  /** Dead letters kept per group. Default 10,000. */
  deadLetterLimit?: number;
  clock?: Clock;
  /** Told when a group without members lost messages to retention. */
  logger?: Logger;
}

interface Topic {
  log: TopicLog;
  groups: Map<string, ConsumerGroup>;
}

/**
 * The embedded mode's bus, with the delivery guarantees of the Kafka one so that workers and
 * schedulers cannot tell them apart: once per group, at least once, in order per key.
 *
 * Retention: each topic keeps its last `retentionPerTopic` messages whether or not anyone
 * consumed them, so a group that subscribes after messages were published starts from the oldest
 * retained one (Kafka with auto.offset.reset=earliest). Groups that have members take each
 * message when it is published; a group whose members all left keeps its position and resumes
 * from it, unless retention dropped messages meanwhile (logged). Nothing survives a restart:
 * whoever needs durability re-publishes from the event log.
 */
export class InProcessBus implements MessageBus, DeadLetterSource {
  private readonly topics = new Map<string, Topic>();
  private readonly settings: DeliverySettings;
  private readonly retention: number;
  private readonly clock: Clock;
  private closed = false;

  constructor(options: InProcessBusOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.retention = count('retentionPerTopic', options.retentionPerTopic ?? 100_000, 0);
    this.settings = {
      baseMs: count('backoffBaseMs', options.backoffBaseMs ?? 100, 0),
      maxMs: count('backoffMaxMs', options.backoffMaxMs ?? 5_000, 0),
      maxAttempts: count('maxAttempts', options.maxAttempts ?? Number.POSITIVE_INFINITY, 1, true),
      concurrency: count('concurrency', options.concurrency ?? 16, 1),
      deadLetterLimit: count('deadLetterLimit', options.deadLetterLimit ?? 10_000, 0),
      now: () => this.clock.now(),
      ...(options.logger ? { logger: options.logger } : {}),
    };
  }

  /** Resolves once every group with members has the message queued; handlers run afterwards. */
  async publish<T>(topic: string, key: string, value: T, headers?: Readonly<Record<string, string>>): Promise<string> {
    this.assertOpen();
    const payload = messagePayload(topic, key, value);
    const id = randomUUID();
    const { log, groups } = this.topic(topic);
    log.append({ id, topic, key, payload, publishedAt: this.clock.now().toISOString(), ...(headers === undefined ? {} : { headers }) });
    for (const group of groups.values()) group.pull();
    log.trim();
    return id;
  }

  async subscribe<T>(options: ConsumerOptions<T>): Promise<Consumer> {
    this.assertOpen();
    const group = this.group(options.topic, options.group, options.startAt);
    // Values cross the bus as JSON, untyped like Kafka records: T is the subscriber's claim about them.
    const member = group.join((message) => options.handler(message as BusMessage<T>));
    return { close: () => group.leave(member) };
  }

  /**
   * A member of the consumer group that takes no messages (those published on the topic are
   * acknowledged and dropped): it owns the keys the group's hash assignment gives it, and is told
   * when a member joins or leaves. The only member of its group owns every key.
   */
  async own(options: OwnershipOptions): Promise<KeyOwnership> {
    this.assertOpen();
    const group = this.group(options.topic, options.group);
    const member = group.join(
      async () => undefined,
      () => options.onChange(ownership),
    );
    const ownership: KeyOwnership = { owns: (key) => group.owns(member, key), close: () => group.leave(member) };
    return ownership;
  }

  /**
   * Whether `group` has a message of `key` on `topic` not yet handled (waiting for a consumer,
   * being handled, or waiting for its redelivery). Only this bus can say so: its messages live in
   * this process, so one it does not hold is gone (lost with a restart, or never published).
   */
  holds(topic: string, group: string, key: string): boolean {
    return this.topics.get(topic)?.groups.get(group)?.holds(key) ?? false;
  }

  deadLetters(topic: string, group: string): DeadLetter[] {
    return this.topics.get(topic)?.groups.get(group)?.deadLetters() ?? [];
  }

  /** Stops deliveries and pending retries; resolves when the handlers already running settled. */
  async close(): Promise<void> {
    this.closed = true;
    const groups = [...this.topics.values()].flatMap((topic) => [...topic.groups.values()]);
    await Promise.all(groups.map((group) => group.stop()));
  }

  private group(topicName: string, name: string, startAt?: 'earliest' | 'latest'): ConsumerGroup {
    const { log, groups } = this.topic(topicName);
    let group = groups.get(name);
    if (!group) {
      group = new ConsumerGroup(topicName, name, log, this.settings, startAt);
      groups.set(name, group);
    }
    return group;
  }

  private topic(name: string): Topic {
    let topic = this.topics.get(name);
    if (!topic) {
      topic = { log: new TopicLog(this.retention), groups: new Map() };
      this.topics.set(name, topic);
    }
    return topic;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('The bus is closed');
  }
}
