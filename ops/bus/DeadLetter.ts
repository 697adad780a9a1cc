import type { BusMessage } from '../../shared/bus/MessageBus.ts';

/** A message that failed on every allowed attempt; `message.attempt` is the last one made. */
export interface DeadLetter {
  message: BusMessage;
  /** Message of the last error thrown by the handler. */
  error: string;
  failedAt: string;
}

/**
 * Where an operator (and the bus contract suite) reads what a group gave up on. Not part of the
 * MessageBus port: producers and consumers never need it, only operations do.
 */
export interface DeadLetterSource {
  deadLetters(topic: string, group: string): ReadonlyArray<DeadLetter> | Promise<ReadonlyArray<DeadLetter>>;
}
