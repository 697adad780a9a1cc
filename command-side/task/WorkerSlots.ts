import type { Laui } from '../../shared/ids.ts';
import { Fifo } from '../../shared/Fifo.ts';
import type { SlotPolicy, SlotWait } from '../../shared/task/SlotWait.ts';

export type { SlotPolicy, SlotWait };

/** A slot held by a run: released once, when its handler ends (more calls do nothing). */
export interface Slot {
  release(): void;
}

export class SlotsClosedError extends Error {
  constructor() {
    super('The worker is stopping: the run waits for another worker (its message is not acknowledged)');
  }
}

interface Waiter {
  taskLaui: Laui;
  seq: number;
  since: Date;
  share: Share;
  grant(slot: Slot): void;
  refuse(error: Error): void;
}

interface Share {
  key: string;
  queue: Fifo<Waiter>;
  running: number;
  /** When the share was last given a slot (a grant counter); 0: not since it was last idle. */
  lastServed: number;
}

export interface WorkerSlotsOptions {
  slots: number;
  policy?: SlotPolicy;
  now?: () => Date;
}

/**
 * A worker's slots (WORKER_CONCURRENCY runs at once) and the runs its bus delivered that wait for
 * one. The bus hands a worker more messages than it has slots (the intake, ops/service.ts), so the
 * order in which runs start is decided here and not by the order the messages came in.
 *
 * Fair share: a freed slot goes to the project (the share) served least recently among those with a
 * waiting run, its oldest waiting run first; a project that has not been served since it was last
 * idle comes first (oldest waiting run first among those). So a project's backlog delays another
 * project's ready run by at most one slot turnover (the next slot that frees is the other
 * project's), and N projects with backlogs take turns slot by slot.
 */
export class WorkerSlots {
  private readonly shares = new Map<string, Share>();
  private readonly waiting = new Map<Laui, Waiter>();
  private readonly now: () => Date;
  readonly policy: SlotPolicy;
  readonly slots: number;
  private busy = 0;
  private grants = 0;
  private seq = 0;
  private closed = false;

  constructor(options: WorkerSlotsOptions) {
    if (!Number.isInteger(options.slots) || options.slots < 1) throw new RangeError(`slots must be an integer >= 1, got ${options.slots}`);
    this.slots = options.slots;
    this.policy = options.policy ?? 'fair';
    this.now = options.now ?? (() => new Date());
  }

  get running(): number {
    return this.busy;
  }

  /** Resolves with a slot for the run when its turn comes; rejects (SlotsClosedError) once closed. */
  acquire(taskLaui: Laui, shareKey: string): Promise<Slot> {
    if (this.closed) return Promise.reject(new SlotsClosedError());
    return new Promise<Slot>((grant, refuse) => {
      let share = this.shares.get(shareKey);
      if (!share) {
        share = { key: shareKey, queue: new Fifo(), running: 0, lastServed: 0 };
        this.shares.set(shareKey, share);
      }
      this.seq += 1;
      const waiter: Waiter = { taskLaui, seq: this.seq, since: this.now(), share, grant, refuse };
      share.queue.push(waiter);
      this.waiting.set(taskLaui, waiter);
      this.pump();
    });
  }

  /** The run's wait, when it waits for a slot of this worker (null: running, gone, or never here). */
  waitOf(taskLaui: Laui): SlotWait | null {
    const waiter = this.waiting.get(taskLaui);
    if (!waiter) return null;
    return { since: waiter.since, ahead: this.aheadOf(waiter), slots: this.slots, running: this.busy, policy: this.policy };
  }

  /** Every waiting run is refused (its message stays unacknowledged) and no more are taken. */
  close(): void {
    this.closed = true;
    for (const share of this.shares.values()) {
      for (let waiter = share.queue.shift(); waiter; waiter = share.queue.shift()) waiter.refuse(new SlotsClosedError());
    }
    this.waiting.clear();
  }

  private pump(): void {
    while (this.busy < this.slots) {
      const share = this.next();
      if (!share) return;
      const waiter = share.queue.shift() as Waiter;
      if (this.waiting.get(waiter.taskLaui) === waiter) this.waiting.delete(waiter.taskLaui);
      this.busy += 1;
      share.running += 1;
      this.grants += 1;
      share.lastServed = this.grants;
      let released = false;
      waiter.grant({
        release: () => {
          if (released) return;
          released = true;
          this.busy -= 1;
          share.running -= 1;
          // An idle project is forgotten: when it comes back it is served first (it waited for no one).
          if (share.running === 0 && share.queue.length === 0) this.shares.delete(share.key);
          this.pump();
        },
      });
    }
  }

  /** The share whose head waiter the policy serves next. */
  private next(): Share | undefined {
    let best: Share | undefined;
    for (const share of this.shares.values()) {
      if (share.queue.length === 0) continue;
      if (!best || this.before(share, best)) best = share;
    }
    return best;
  }

  private before(a: Share, b: Share): boolean {
    const headA = (a.queue.peek() as Waiter).seq;
    const headB = (b.queue.peek() as Waiter).seq;
    if (this.policy === 'fifo' || a.lastServed === b.lastServed) return headA < headB;
    return a.lastServed < b.lastServed;
  }

  /**
   * The grants before `waiter`'s, if no run arrives meanwhile. FIFO: the older waiters. Fair: the
   * turns go round the shares in `before` order; the waiter is served in round i (its place in its
   * share), so a share served before its own in a round gives min(n, i + 1) runs, any other min(n, i).
   */
  private aheadOf(waiter: Waiter): number {
    const own = waiter.share;
    if (this.policy === 'fifo') {
      let older = 0;
      for (const share of this.shares.values()) for (const other of share.queue.toArray()) if (other.seq < waiter.seq) older += 1;
      return older;
    }
    const place = own.queue.toArray().indexOf(waiter);
    let ahead = place;
    for (const share of this.shares.values()) {
      if (share === own || share.queue.length === 0) continue;
      ahead += Math.min(share.queue.length, this.before(share, own) ? place + 1 : place);
    }
    return ahead;
  }
}
