/** Time arrives through this port so that deciders and tests never read the wall clock. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock a test can move by hand. */
export const fixedClock = (start: Date): Clock & { advance(ms: number): void; set(at: Date): void } => {
  let current = start.getTime();
  return {
    now: () => new Date(current),
    advance: (ms: number) => {
      current += ms;
    },
    set: (at: Date) => {
      current = at.getTime();
    },
  };
};
