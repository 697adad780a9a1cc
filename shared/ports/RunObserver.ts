/**
 * What a worker tells about the runs it executes (ops/metrics: the Prometheus instruments). Called
 * on the run's path: an implementation records and returns at once, never throws, never waits.
 */
export interface RunObserver {
  /** A run was picked up, `waitSeconds` after it was requested (its queued_for_connection step). */
  pickedUp(waitSeconds: number): void;
  /** A run's end was recorded: its terminal state (success, error, timeout, cancelled, fail) and how long it ran. */
  ended(state: string, runSeconds: number): void;
  /** A run ended without its worker's report (the lease reaper ended it `error`): counted, with no run time. */
  abandoned(state: string): void;
}

