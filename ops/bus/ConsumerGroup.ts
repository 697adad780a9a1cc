import type { BusMessage } from '../../shared/bus/MessageBus.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import { backoffDelay, type BackoffSettings } from './backoffDelay.ts';
import type { DeadLetter } from './DeadLetter.ts';
import { Fifo } from '../../shared/Fifo.ts';
import { InFlight } from './InFlight.ts';
import type { StoredMessage, TopicLog } from './TopicLog.ts';

export type Handler = (message: BusMessage) => Promise<void>;

export interface DeliverySettings extends BackoffSettings {
  /** Attempts before a message goes to the dead letters; Infinity retries for ever. */
  maxAttempts: number;
  /** Handlers of distinct keys one consumer runs at once. */
  concurrency: number;
  /** Dead letters kept per group, oldest dropped first. */
  deadLetterLimit: number;
  now(): Date;
  logger?: Logger;
}

/**
 * The messages of one key not yet handled, oldest first. The head stays in place until its
 * handler succeeds or it is dead-lettered, which is what holds later messages of the key back
 * during retries: a lane is ready, running or waiting out a backoff, never two at once.
 */
interface Lane {
  key: string;
  pending: Fifo<StoredMessage>;
  attempt: number;
  timer: NodeJS.Timeout | undefined;
}

class Member {
  readonly ready = new Set<Lane>();
  readonly inFlight = new InFlight();
  left = false;

  /** `onRebalance` is told after a later join or leave moved keys; not about its own join. */
  constructor(
    readonly handler: Handler,
    readonly onRebalance?: () => void,
  ) {}
}

/**
 * One consumer group on one topic. Keys are spread over members by hash, as Kafka spreads
 * partitions; a lane belongs to the group, not to a member, so a key is never handled twice at
 * once even while membership changes under a running handler. The same assignment answers
 * `owns` (the bus's key ownership), so a member owns exactly the keys whose messages it gets.
 */
export class ConsumerGroup {
  private readonly members: Member[] = [];
  private readonly lanes = new Map<string, Lane>();
  /** Ready lanes while the group has no member; they go to the first one to join. */
  private readonly unowned = new Set<Lane>();
  private readonly inFlight = new InFlight();
  private readonly dead = new Fifo<DeadLetter>();
  private cursor: number;
  private stopped = false;

  constructor(
    private readonly topic: string,
    private readonly name: string,
    private readonly log: TopicLog,
    private readonly settings: DeliverySettings,
    startAt: 'earliest' | 'latest' = 'earliest',
  ) {
    // A group seen for the first time reads from the oldest retained message (Kafka's "earliest"),
    // or from the end when it asked for 'latest'.
    this.cursor = startAt === 'latest' ? log.endOffset : log.firstOffset;
  }

  join(handler: Handler, onRebalance?: () => void): Member {
    const member = new Member(handler, onRebalance);
    this.members.push(member);
    this.rebalance([]);
    this.announceRebalance(member);
    this.pull();
    return member;
  }

  /** Whether `member` is the one the group's assignment gives `key` to. */
  owns(member: Member, key: string): boolean {
    return !this.stopped && !member.left && this.ownerOf(key) === member;
  }

  /** Its ready keys move to the remaining members at once; resolves when its handlers settled. */
  async leave(member: Member): Promise<void> {
    const index = this.members.indexOf(member);
    if (index >= 0) {
      this.members.splice(index, 1);
      member.left = true;
      const orphans = [...member.ready];
      member.ready.clear();
      this.rebalance(orphans);
      this.announceRebalance(member);
    }
    await member.inFlight.idle();
  }

  /**
   * Takes the messages appended since the last pull. A group without members leaves them in the
   * log, where retention may drop them, as Kafka does for a group that stays away too long.
   */
  pull(): void {
    if (this.stopped || this.members.length === 0) return;
    const skipped = this.log.firstOffset - this.cursor;
    if (skipped > 0) {
      this.settings.logger?.log({
        level: 'warning',
        category: 'CELERY',
        message: `Group ${this.name} missed ${skipped} message(s) of ${this.topic} dropped by retention`,
      });
    }
    for (const message of this.log.readFrom(this.cursor)) this.enqueue(message);
    this.cursor = this.log.endOffset;
  }

  /** Whether a message of `key` is still to be handled by the group: waiting, being handled or between retries. */
  holds(key: string): boolean {
    return this.lanes.has(key);
  }

  deadLetters(): DeadLetter[] {
    return this.dead.toArray().map((letter) => ({ ...letter, message: structuredClone(letter.message) }));
  }

  /** Stops every delivery and retry; resolves when the handlers already running settled. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const lane of this.lanes.values()) clearTimeout(lane.timer);
    await this.inFlight.idle();
  }

  private enqueue(message: StoredMessage): void {
    let lane = this.lanes.get(message.key);
    if (!lane) {
      lane = { key: message.key, pending: new Fifo(), attempt: 1, timer: undefined };
      this.lanes.set(message.key, lane);
    }
    lane.pending.push(message);
    // Lanes are deleted once empty, so a single pending message means the lane was idle.
    if (lane.pending.length === 1) this.markReady(lane);
  }

  private markReady(lane: Lane): void {
    if (this.stopped) return;
    const owner = this.ownerOf(lane.key);
    if (!owner) {
      this.unowned.add(lane);
      return;
    }
    owner.ready.add(lane);
    this.drain(owner);
  }

  private drain(member: Member): void {
    while (!this.stopped && !member.left && member.inFlight.size < this.settings.concurrency) {
      const [lane] = member.ready;
      if (!lane) return;
      member.ready.delete(lane);
      this.deliver(member, lane);
    }
  }

  private deliver(member: Member, lane: Lane): void {
    const stored = lane.pending.peek();
    if (!stored) return;
    const message = toBusMessage(stored, lane.attempt);
    member.inFlight.begin();
    this.inFlight.begin();
    // Through a promise so the handler never runs inside publish() and a synchronous throw counts as a failure.
    Promise.resolve()
      .then(() => member.handler(message))
      .then(
        () => this.settle(member, lane, null),
        (error: unknown) => this.settle(member, lane, { error }),
      );
  }

  private settle(member: Member, lane: Lane, failure: { error: unknown } | null): void {
    member.inFlight.end();
    this.inFlight.end();
    if (this.stopped) return;
    const stored = lane.pending.peek();
    if (failure && lane.attempt < this.settings.maxAttempts) {
      const wait = backoffDelay(this.settings, lane.attempt);
      lane.attempt += 1;
      lane.timer = setTimeout(() => {
        lane.timer = undefined;
        this.markReady(lane);
      }, wait);
    } else {
      if (failure && stored) this.bury(toBusMessage(stored, lane.attempt), failure.error);
      lane.pending.shift();
      lane.attempt = 1;
      if (lane.pending.length === 0) this.lanes.delete(lane.key);
      else this.markReady(lane);
    }
    this.drain(member);
  }

  private bury(message: BusMessage, error: unknown): void {
    const reason = error instanceof Error ? error.message : String(error);
    this.dead.push({ message, error: reason, failedAt: this.settings.now().toISOString() });
    while (this.dead.length > this.settings.deadLetterLimit) this.dead.shift();
  }

  /** Hands every waiting lane to its owner under the new membership, then starts what fits. */
  private rebalance(orphans: ReadonlyArray<Lane>): void {
    const lanes = [...this.unowned, ...orphans, ...this.members.flatMap((member) => [...member.ready])];
    this.unowned.clear();
    for (const member of this.members) member.ready.clear();
    for (const lane of lanes) {
      const owner = this.ownerOf(lane.key);
      if (owner) owner.ready.add(lane);
      else this.unowned.add(lane);
    }
    for (const member of this.members) this.drain(member);
  }

  /**
   * Tells the other members that keys moved, after the current call returns: a listener that
   * joins or leaves in turn must not do so inside this rebalance.
   */
  private announceRebalance(cause: Member): void {
    for (const member of this.members) {
      const listener = member.onRebalance;
      if (member === cause || !listener) continue;
      queueMicrotask(() => {
        if (this.stopped || member.left) return;
        try {
          listener();
        } catch (error) {
          this.settings.logger?.log({ level: 'error', category: 'CELERY', message: `Ownership listener of group ${this.name} on ${this.topic} failed: ${String(error)}` });
        }
      });
    }
  }

  private ownerOf(key: string): Member | undefined {
    return this.members.length === 0 ? undefined : this.members[hashKey(key) % this.members.length];
  }
}

/** Each delivery parses its own copy: one group's handler cannot change what another receives. */
const toBusMessage = (stored: StoredMessage, attempt: number): BusMessage => ({
  id: stored.id,
  topic: stored.topic,
  key: stored.key,
  value: JSON.parse(stored.payload) as unknown,
  publishedAt: stored.publishedAt,
  attempt,
  ...(stored.headers === undefined ? {} : { headers: stored.headers }),
});

/** FNV-1a: cheap, stable across runs, and spreads similar keys (ids differing in a digit). */
const hashKey = (key: string): number => {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i += 1) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
};
