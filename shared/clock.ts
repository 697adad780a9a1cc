/** Time arrives through this port so that deciders and tests never read the wall clock. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

let formattedAt = NaN;
let formatted = '';

/**
 * `date.toISOString()`, formatted once per millisecond: events and log lines are stamped in bursts
 * (every event of a command, two log lines per request), and formatting was ~1% of a catalog
 * create. A pure function of the time, so one remembered value serves every caller.
 */
export const isoTime = (date: Date): string => {
  const at = date.getTime();
  if (at !== formattedAt) {
    formatted = date.toISOString();
    formattedAt = at;
  }
  return formatted;
};

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
