import { randomUUID } from 'node:crypto';
import type { Laui } from '../../shared/ids.ts';
import type { Consumer, MessageBus } from '../../shared/bus/MessageBus.ts';
import { HeartbeatStore, type TaskHeartbeats } from '../../command-side/task/HeartbeatStore.ts';

/** The topic task heartbeats cross processes on (Kafka mode): key task_laui. */
export const TASK_HEARTBEATS = 'task-heartbeats';

interface HeartbeatMessage {
  at: string;
  /** Set when the run ended: the task has no live run to judge any more. */
  forget?: boolean;
}

export interface RelayedHeartbeatsOptions {
  bus: Pick<MessageBus, 'publish' | 'subscribe'>;
  /** A beat of one task goes out at most this often (the reaper's stale_heartbeat_seconds must exceed it). */
  publishEveryMs?: number;
  onError?(error: unknown): void;
}

/**
 * Task heartbeats when workers and the lease reaper are different processes (the roles of the
 * distributed mode, or several `all` processes on one Kafka): each process keeps the beats in
 * memory (HeartbeatStore) and relays its own workers' beats over the bus, at most once per
 * `publishEveryMs` per task; every process reads them all under a consumer group of its own,
 * starting at the topic's end (older beats are of no use: a lease without a beat since this
 * process started is judged by its lease time). Without the relay a scheduler would see no beat of
 * a run on another process and reap every lease older than stale_heartbeat_seconds, live or not.
 * The beats stay out of the event log (DESIGN §3): Kafka keeps them only for its retention.
 */
export class RelayedHeartbeats implements TaskHeartbeats {
  private readonly local = new HeartbeatStore();
  private readonly publishedAt = new Map<Laui, number>();
  private readonly publishEveryMs: number;
  private consumer: Consumer | null = null;

  constructor(private readonly options: RelayedHeartbeatsOptions) {
    this.publishEveryMs = options.publishEveryMs ?? 1000;
  }

  /** Joins the relay (a group of this process's own); resolves once it reads. */
  async start(instanceId: string = randomUUID()): Promise<void> {
    this.consumer = await this.options.bus.subscribe<HeartbeatMessage>({
      topic: TASK_HEARTBEATS,
      group: `task-heartbeats.${instanceId}`,
      startAt: 'latest',
      handler: async (message) => {
        const at = Date.parse(message.value.at);
        if (message.value.forget === true) this.local.forget(message.key);
        else if (!Number.isNaN(at)) this.keepNewer(message.key, at);
      },
    });
  }

  beat(taskLaui: Laui, at: Date): void {
    this.keepNewer(taskLaui, at.getTime());
    const last = this.publishedAt.get(taskLaui);
    if (last !== undefined && at.getTime() - last < this.publishEveryMs) return;
    this.publishedAt.set(taskLaui, at.getTime());
    this.send(taskLaui, { at: at.toISOString() });
  }

  last(taskLaui: Laui): Date | null {
    return this.local.last(taskLaui);
  }

  forget(taskLaui: Laui): void {
    this.local.forget(taskLaui);
    if (this.publishedAt.delete(taskLaui)) this.send(taskLaui, { at: new Date().toISOString(), forget: true });
  }

  async close(): Promise<void> {
    await this.consumer?.close();
    this.consumer = null;
  }

  /** Beats of one task may arrive out of order across processes: the newest wins. */
  private keepNewer(taskLaui: Laui, at: number): void {
    const known = this.local.last(taskLaui);
    if (known === null || known.getTime() < at) this.local.beat(taskLaui, new Date(at));
  }

  /** Liveness is best effort: a lost beat only brings the reaper's judgement closer, never a wrong state. */
  private send(taskLaui: Laui, value: HeartbeatMessage): void {
    this.options.bus.publish(TASK_HEARTBEATS, taskLaui, value).catch((error: unknown) => this.options.onError?.(error));
  }
}
