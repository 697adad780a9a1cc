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
}

export interface ConsumerOptions<T> {
  topic: string;
  group: string;
  handler(message: BusMessage<T>): Promise<void>;
}

export interface Consumer {
  close(): Promise<void>;
}

export interface MessageBus {
  /** Returns the message id (the task engine reports it as execution_result_id). */
  publish<T>(topic: string, key: string, value: T): Promise<string>;
  subscribe<T>(options: ConsumerOptions<T>): Promise<Consumer>;
  close(): Promise<void>;
}
