import type { ConsumerOptions, MessageBus } from '../../shared/bus/MessageBus.ts';
import type { DeadLetter, DeadLetterSource } from './DeadLetter.ts';

/**
 * KAFKA_TOPIC_PREFIX: every topic and consumer group of this deployment carries the prefix on the
 * broker, so that deployments (staging and production, or one test run and the next) can share a
 * Kafka cluster without reading each other's work. Features keep naming topics as they do; the
 * prefix exists only between this decorator and the broker.
 */
export const prefixedBus = <B extends MessageBus & DeadLetterSource>(bus: B, prefix: string): MessageBus & DeadLetterSource => {
  if (prefix === '') return bus;
  const named = (name: string) => `${prefix}${name}`;
  const unnamed = (name: string) => (name.startsWith(prefix) ? name.slice(prefix.length) : name);
  return {
    publish: (topic, key, value, headers) => bus.publish(named(topic), key, value, headers),
    subscribe: <T>(options: ConsumerOptions<T>) =>
      bus.subscribe<T>({
        ...options,
        topic: named(options.topic),
        group: named(options.group),
        handler: (message) => options.handler({ ...message, topic: unnamed(message.topic) }),
      }),
    own: (options) => bus.own({ ...options, topic: named(options.topic), group: named(options.group) }),
    deadLetters: async (topic, group): Promise<ReadonlyArray<DeadLetter>> =>
      (await bus.deadLetters(named(topic), named(group))).map((letter) => ({ ...letter, message: { ...letter.message, topic: unnamed(letter.message.topic) } })),
    close: () => bus.close(),
  };
};
