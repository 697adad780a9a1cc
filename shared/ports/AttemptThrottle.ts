/**
 * Guards a credential check against guessing. `begin` counts the attempt before the check, so
 * parallel guesses are counted before any of them is answered; a refused attempt says how long to
 * wait. An allowed attempt that turns out right calls `succeeded`: it is not counted as a failure
 * (and may end the key's streak of failures).
 */
export type ThrottleDecision = { allowed: true; succeeded(): Promise<void> } | { allowed: false; retryAfterSeconds: number };

export interface AttemptThrottle<Key> {
  begin(key: Key): Promise<ThrottleDecision>;
}

/** A login is throttled by the name tried and by where it comes from. */
export interface LoginAttempt {
  username: string;
  /** The client address as clientAddress() keys it. */
  address: string;
}
