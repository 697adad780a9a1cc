/**
 * Topics carry JSON messages with a key; a consumer group receives each message once per group
 * (at least once: a handler that throws gets the message again). Messages of one key are
 * delivered in publish order, which is what Kafka partitions give in the distributed mode.
 */
export interface BusMessage<T = unknown> {
  id: string;
  topic: string;
  key: string;
  value: T;
  publishedAt: string;
  /** 1 on first delivery, more on redelivery: consumers must be idempotent. */
  attempt: number;
  /**
   * What travels beside the value, not in it: the trace context of the publisher's span
   * (W3C `traceparent`, `tracestate`). Kafka carries them as record headers.
   */
  headers?: Readonly<Record<string, string>>;
}

export interface ConsumerOptions<T> {
  topic: string;
  group: string;
  handler(message: BusMessage<T>): Promise<void>;
  /**
   * Where a group seen for the first time starts: the oldest retained message (default, Kafka's
   * "earliest") or the topic's end ('latest': only what is published after it joined, for a
   * process's own group on a stream of liveness that is worthless once old).
   */
  startAt?: 'earliest' | 'latest';
}

export interface Consumer {
  close(): Promise<void>;
}

/**
 * The keys of a topic that the bus assigns to one member of a group: the same assignment that
 * routes the topic's messages to the group's consumers (Kafka: the partitions assigned to this
 * member, a key's partition being the default partitioner's). A process uses it to share keyed
 * work that is not carried by messages, such as the scheduler loops of projects (key project_laui).
 *
 * The assignment changes when a member joins or leaves (closes, crashes, stops heartbeating) and
 * when the topic's partitions change. Like delivery, ownership is at least once: during a
 * rebalance two members may both believe for a while that they own a key (the old owner learns of
 * the rebalance only at its next heartbeat), and a key may have no owner for a moment. So a key's
 * owner must still guard its writes (for the scheduler: the claim on the task's own stream).
 */
export interface KeyOwnership {
  /** Whether the bus currently assigns `key` to this member; false once closed. */
  owns(key: string): boolean;
  /** Leaves the group: its keys go to the remaining members. */
  close(): Promise<void>;
}

export interface OwnershipOptions {
  /** The topic whose key assignment is followed; it need carry no messages. */
  topic: string;
  group: string;
  /**
   * Called after each rebalance that may have changed this member's keys; not for the first
   * assignment, which holds when `own` resolves, nor after `close`. Must not throw.
   */
  onChange(ownership: KeyOwnership): void;
}

export interface MessageBus {
  /** Returns the message id (the task engine reports it as execution_result_id). */
  publish<T>(topic: string, key: string, value: T, headers?: Readonly<Record<string, string>>): Promise<string>;
  subscribe<T>(options: ConsumerOptions<T>): Promise<Consumer>;
  /** Joins `group` on `topic` as a member; resolves once the member has its first assignment. */
  own(options: OwnershipOptions): Promise<KeyOwnership>;
  close(): Promise<void>;
}
