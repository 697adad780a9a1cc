export interface BackoffSettings {
  /** Wait before the second delivery. */
  baseMs: number;
  /** No wait grows beyond this, however many attempts failed. */
  maxMs: number;
}

/**
 * Wait before delivering attempt `failedAttempt + 1`: base, 2 base, 4 base... capped.
 * Exponential so a handler failing on a down dependency is not hammered; capped so a message
 * does not sit for minutes once the dependency is back.
 */
export const backoffDelay = ({ baseMs, maxMs }: BackoffSettings, failedAttempt: number): number =>
  Math.min(maxMs, baseMs * 2 ** Math.max(0, failedAttempt - 1));
