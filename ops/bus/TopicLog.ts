import { Fifo } from '../../shared/Fifo.ts';

/** A published message as kept by the bus: the value stays JSON text until each delivery. */
export interface StoredMessage {
  offset: number;
  id: string;
  topic: string;
  key: string;
  payload: string;
  publishedAt: string;
  headers?: Readonly<Record<string, string>>;
}

/**
 * The retained tail of one topic, with Kafka-like offsets. Retention is a count, not a time:
 * the embedded bus holds everything in memory, so what it keeps must be bounded by the operator
 * (`retentionPerTopic`) rather than by traffic.
 */
export class TopicLog {
  private readonly messages = new Fifo<StoredMessage>();
  private nextOffset = 0;

  constructor(private readonly retention: number) {}

  /** Offset of the oldest retained message; equals `endOffset` when nothing is retained. */
  get firstOffset(): number {
    return this.nextOffset - this.messages.length;
  }

  get endOffset(): number {
    return this.nextOffset;
  }

  append(message: Omit<StoredMessage, 'offset'>): StoredMessage {
    const stored = { ...message, offset: this.nextOffset };
    this.messages.push(stored);
    this.nextOffset += 1;
    return stored;
  }

  /** Called after live groups took the new message, so that a retention of 0 still delivers to them. */
  trim(): void {
    while (this.messages.length > this.retention) this.messages.shift();
  }

  /** Retained messages from `offset` on; older ones are gone and silently skipped. */
  *readFrom(offset: number): Generator<StoredMessage> {
    for (let at = Math.max(offset, this.firstOffset); at < this.nextOffset; at += 1) {
      const message = this.messages.at(at - this.firstOffset);
      if (message) yield message;
    }
  }
}
