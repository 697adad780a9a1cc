import type { Position } from '../../shared/event-store/EventStore.ts';

interface Waiter {
  position: Position;
  resolve(reached: boolean): void;
  timer: NodeJS.Timeout;
}

/** Callers waiting, each with its own timeout, for the read models to reach a position. */
export class PositionWaiters {
  private readonly waiters = new Set<Waiter>();

  get size(): number {
    return this.waiters.size;
  }

  /** Resolves true when `release` reaches `position`, false after `timeoutMs` (or on `dropAll`). */
  wait(position: Position, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const waiter: Waiter = {
        position,
        resolve,
        timer: setTimeout(() => {
          this.waiters.delete(waiter);
          resolve(false);
        }, timeoutMs),
      };
      this.waiters.add(waiter);
    });
  }

  /** The read models are at `reached`: every waiter at or below it is answered. */
  release(reached: Position): void {
    for (const waiter of this.waiters) {
      if (waiter.position > reached) continue;
      this.settle(waiter, true);
    }
  }

  /** Answers everyone "not reached" (the runner stopped). */
  dropAll(): void {
    for (const waiter of this.waiters) this.settle(waiter, false);
  }

  private settle(waiter: Waiter, reached: boolean): void {
    clearTimeout(waiter.timer);
    this.waiters.delete(waiter);
    waiter.resolve(reached);
  }
}
