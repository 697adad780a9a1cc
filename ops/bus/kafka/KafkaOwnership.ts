import type { Consumer, ConsumerGroupJoinEvent } from 'kafkajs';
import type { KeyOwnership, OwnershipOptions } from '../../../shared/bus/MessageBus.ts';
import type { Logger } from '../../../shared/ports/Logger.ts';
import { partitionOfKey } from './keyPartition.ts';

export interface KafkaOwnershipDeps {
  /** A consumer of the group, connected and subscribed to the topic, not yet running. */
  consumer: Consumer;
  /** The topic's partition count now (it may grow: each join reads it again). */
  partitionCount(topic: string): Promise<number>;
  /** Told once the ownership has closed (the bus forgets it). */
  onClosed?(ownership: KafkaOwnership): void;
  logger?: Logger;
}

/**
 * Key ownership from Kafka's group membership: a consumer of the group on the topic, taking no
 * messages, whose partitions are those of its latest GROUP_JOIN (kafkajs emits it after every
 * join and sync, so after every rebalance). A key is owned when the producer's default partitioner
 * sends it to one of them. Between a rebalance on the broker and this member's next heartbeat the
 * old assignment still answers: that is the overlap the port documents.
 */
export class KafkaOwnership implements KeyOwnership {
  private assigned: ReadonlySet<number> = new Set();
  private partitions = 0;
  private closed = false;
  private joins = 0;
  /** Joins are applied in the order kafkajs emitted them, though each awaits a metadata read. */
  private assigning: Promise<void> = Promise.resolve();
  private readonly removeListeners: Array<() => void> = [];

  private constructor(
    private readonly options: OwnershipOptions,
    private readonly deps: KafkaOwnershipDeps,
  ) {}

  /** Runs the consumer; resolves after its first assignment, rejects if it crashes before. */
  static async join(options: OwnershipOptions, deps: KafkaOwnershipDeps): Promise<KafkaOwnership> {
    const ownership = new KafkaOwnership(options, deps);
    const { consumer } = deps;
    const firstJoin = new Promise<void>((resolve, reject) => {
      ownership.removeListeners.push(
        consumer.on(consumer.events.GROUP_JOIN, (event) => {
          const applied = ownership.assigning.then(() => ownership.assign(event));
          // A failed read leaves the previous assignment in force until the next join.
          ownership.assigning = applied.catch((error: unknown) => ownership.log('error', `Reading the partitions of ${options.topic} failed: ${String(error)}`));
          applied.then(resolve, reject);
        }),
        consumer.on(consumer.events.CRASH, (event) => {
          // After a crash kafkajs will not restart from, this member has no partitions.
          if (!event.payload.restart) ownership.lose(`consumer crashed: ${event.payload.error.message}`);
          reject(event.payload.error);
        }),
      );
    });
    // Awaited below; until then a crash must not count as an unhandled rejection.
    firstJoin.catch(() => undefined);
    try {
      // Messages on an ownership topic carry nothing: they are acknowledged and dropped.
      await consumer.run({ eachMessage: async () => undefined });
      await firstJoin;
    } catch (error) {
      await ownership.close();
      throw error;
    }
    return ownership;
  }

  owns(key: string): boolean {
    if (this.closed || this.partitions === 0 || this.assigned.size === 0) return false;
    return this.assigned.has(partitionOfKey(this.options.topic, key, this.partitions));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.assigned = new Set();
    for (const remove of this.removeListeners.splice(0)) remove();
    // Leaving the group is what hands the partitions to the other members at once.
    try {
      await this.deps.consumer.disconnect();
    } finally {
      this.deps.onClosed?.(this);
    }
  }

  private async assign(event: ConsumerGroupJoinEvent): Promise<void> {
    const partitions = await this.deps.partitionCount(this.options.topic);
    if (this.closed) return;
    this.partitions = partitions;
    this.assigned = new Set(event.payload.memberAssignment[this.options.topic] ?? []);
    this.joins += 1;
    if (this.joins > 1) this.tell();
  }

  private lose(reason: string): void {
    if (this.closed || this.assigned.size === 0) return;
    this.assigned = new Set();
    this.log('warning', `Lost the partitions of ${this.options.topic} (${reason})`);
    this.tell();
  }

  private tell(): void {
    try {
      this.options.onChange(this);
    } catch (error) {
      this.log('error', `Ownership listener of group ${this.options.group} on ${this.options.topic} failed: ${String(error)}`);
    }
  }

  private log(level: 'warning' | 'error', message: string): void {
    this.deps.logger?.log({ level, category: 'CELERY', message });
  }
}
