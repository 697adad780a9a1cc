import { toInstant } from '../../shared/task/dates.ts';

/** What the reaper sees of a lease (the connection queue's running entry). */
export interface LeaseView {
  sessionId: string;
  leasedAt: string;
}

/** What the reaper sees of the lease's task (the read model: state, session_id, latest_heartbeat, task_instance_start_date), null when the task is gone. */
export type LeaseTaskView = Readonly<Record<string, unknown>>;

export interface LeaseFacts {
  lease: LeaseView;
  task: LeaseTaskView | null;
  /** The newest beat of the task's run known to this process (its workers', or relayed). */
  beat: Date | null;
  /**
   * Whether the bus still holds the run's dispatch message (waiting for a worker slot, being
   * handled, waiting for a redelivery): true or false where the reaper can know it (the in-process
   * bus, whose every worker is in this process), null where it cannot (Kafka, which keeps a message
   * until a worker has handled it).
   */
  busHolds: boolean | null;
  /** Since when this process receives beats (its start): a started run without a known beat is judged from then at the earliest. */
  watchingSince: Date;
  now: Date;
  staleSeconds: number;
}

export const STALE_HEARTBEAT = 'worker heartbeat went stale; the run was abandoned';
export const NEVER_DELIVERED = 'the run never reached a worker: its dispatch message is gone (the service restarted, or the message could not be sent); the run was abandoned';

export type LeaseVerdict =
  | { kind: 'keep' }
  /** The run is abandoned: its task ends `error` with this output, and the slot is released. */
  | { kind: 'reap'; error: string }
  /** The lease is no longer its task's run (the task was deleted, reset or re-run): only the slot is released. */
  | { kind: 'release' };

const KEEP: LeaseVerdict = { kind: 'keep' };

/**
 * The reaper's rule (README, Operations): a run is stale only when its own heartbeats stop.
 * - A run that started (its task is `running` under the lease's session, or a worker beat for it
 *   since the lease was taken; beats begin at pick-up) is abandoned once its newest beat is
 *   `staleSeconds` old. Without a beat known here (this process started after the run's worker
 *   last beat) it is judged from its pick-up time, but from no earlier than this process's start:
 *   a live worker elsewhere gets that long to be heard.
 * - A run that has not started (queued_in_redis: delivered to a worker that has no free slot yet,
 *   or not delivered yet) is never abandoned for its wait, however long. Only when the bus can say
 *   it no longer holds the run's message (the in-process bus after a restart, or a message that
 *   could not be sent) is the run abandoned, `staleSeconds` after its lease.
 * - A lease whose task no longer runs under it is released `staleSeconds` after it was taken (the
 *   read model may lag the lease that long).
 */
export const judgeLease = (facts: LeaseFacts): LeaseVerdict => {
  const { lease, task, now } = facts;
  const staleMs = facts.staleSeconds * 1000;
  const leasedAt = toInstant(lease.leasedAt) ?? now;
  const olderThanStale = (since: Date): boolean => now.getTime() - since.getTime() >= staleMs;
  const holdsLease = task !== null && task.session_id === lease.sessionId && (task.state === 'queued_in_redis' || task.state === 'running');
  if (!holdsLease) return olderThanStale(leasedAt) ? { kind: 'release' } : KEEP;
  // A beat older than the lease is an earlier run's (its forget was lost): it says nothing of this one.
  const beat = facts.beat !== null && facts.beat.getTime() >= leasedAt.getTime() ? facts.beat : null;
  if (beat !== null || task.state === 'running') {
    // The task's own record counts too: pick-up sets latest_heartbeat, and a worker reporting over
    // HTTP (POST /task/update) beats through it.
    const recorded = toInstant(task.latest_heartbeat) ?? toInstant(task.task_instance_start_date) ?? leasedAt;
    const heard = beat ?? facts.watchingSince;
    const last = Math.max(recorded.getTime(), heard.getTime(), leasedAt.getTime());
    return olderThanStale(new Date(last)) ? { kind: 'reap', error: STALE_HEARTBEAT } : KEEP;
  }
  if (facts.busHolds === false && olderThanStale(leasedAt)) return { kind: 'reap', error: NEVER_DELIVERED };
  return KEEP;
};
