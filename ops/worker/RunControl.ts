/** Deadline and cancellation of one run; isCancelled and the heartbeat are polled in the background. */
export class RunControl {
  cancelled = false;
  private readonly cancelledSignal: Promise<'cancelled'>;
  private fire: () => void = () => {};
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** One timer for the run's own deadline, shared by every wait on it (a run waits on it several times). */
  private expiry: Promise<'deadline'> | null = null;
  private expiryTimer: NodeJS.Timeout | null = null;

  constructor(readonly deadline: number) {
    this.cancelledSignal = new Promise<'cancelled'>((resolve) => {
      this.fire = () => resolve('cancelled');
    });
  }

  watch(intervalMs: number, isCancelled: () => Promise<boolean>, onHeartbeat?: () => void): void {
    const every = Math.max(10, intervalMs);
    const tick = async () => {
      if (this.stopped) return;
      try {
        onHeartbeat?.();
      } catch {
        // a failing heartbeat must not break the run
      }
      const cancelled = await Promise.resolve().then(isCancelled).catch(() => false);
      if (cancelled) return this.cancel();
      if (!this.stopped) this.timer = setTimeout(() => void tick(), every);
    };
    this.timer = setTimeout(() => void tick(), every);
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.fire();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
  }

  /** The first of: `work`, the deadline, cancellation. */
  async race<T>(work: Promise<T>, deadline = this.deadline): Promise<T | 'deadline' | 'cancelled'> {
    if (deadline !== this.deadline) {
      const result = await raceUntil(Promise.race([work, this.cancelledSignal]), deadline);
      return result;
    }
    if (!this.expiry) {
      this.expiry = new Promise<'deadline'>((resolve) => {
        this.expiryTimer = setTimeout(() => resolve('deadline'), Math.max(0, deadline - Date.now()));
      });
    }
    return Promise.race([work, this.expiry, this.cancelledSignal]);
  }

  /** Waits until `at` (capped by the deadline): 'slept', or what interrupted the wait. */
  async sleepUntil(at: number): Promise<'slept' | 'deadline' | 'cancelled'> {
    if (this.cancelled) return 'cancelled';
    const wake = new Promise<'slept'>((resolve) => setTimeout(() => resolve('slept'), Math.max(0, Math.min(at, this.deadline) - Date.now())));
    const result = await this.race(wake);
    return result === 'slept' && Date.now() >= this.deadline ? 'deadline' : result;
  }
}

/** `work` or 'deadline', whichever comes first; the timer goes with the wait. */
export async function raceUntil<T>(work: Promise<T>, deadline: number): Promise<T | 'deadline'> {
  let timer: NodeJS.Timeout | undefined;
  const expiry = new Promise<'deadline'>((resolve) => {
    timer = setTimeout(() => resolve('deadline'), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([work, expiry]);
  } finally {
    clearTimeout(timer);
  }
}
