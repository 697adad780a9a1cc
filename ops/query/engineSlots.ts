import type { QueryRun } from './queryRun.ts';

/**
 * Embedded-engine queries running at once (QUERY_ENGINE_CONCURRENCY): each may hold its memory
 * limit, its threads and up to QUERY_OBJECTS_MAX_MB of disk. A query past the bound waits for a
 * slot on its own clock (the wait counts against its statement timeout).
 */
export class EngineSlots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly max: number) {}

  /** Resolves with the release function once a slot is free; rejects with the run's error when it stops first. */
  async acquire(run: QueryRun): Promise<() => void> {
    if (this.running < this.max) {
      this.running += 1;
      return this.releaser();
    }
    await new Promise<void>((resolve, reject) => {
      const turn = () => {
        run.signal.removeEventListener('abort', giveUp);
        resolve();
      };
      const giveUp = () => {
        const index = this.waiting.indexOf(turn);
        if (index !== -1) this.waiting.splice(index, 1);
        reject(run.stoppedError());
      };
      if (run.stopped) return reject(run.stoppedError());
      this.waiting.push(turn);
      run.signal.addEventListener('abort', giveUp, { once: true });
    });
    return this.releaser();
  }

  /** The slot passes straight to the next waiter, or is freed. */
  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.running -= 1;
    };
  }
}
