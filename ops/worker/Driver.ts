import type { ProcessDied, WireError } from './RuntimeProcess.ts';

/** What one call of a run gave: its value, its error, or why it has none. */
export type CallResult =
  | { kind: 'ok'; value: unknown; functions?: string[] }
  | { kind: 'error'; error: WireError }
  | { kind: 'timeout' }
  | { kind: 'cancelled' }
  | { kind: 'died'; died: ProcessDied };

/**
 * How the calls of one run reach its process. The run's logic (what is called when, what the
 * outcome is) is written once, in runOperator/poll, on top of this: StepDriver makes one request
 * per step and polls from here; ExecDriver sends the whole run as one request and reads one line
 * per step, the process polling by itself. Both give the same outcomes.
 */
export interface Driver {
  /** The code loaded: the functions it defines (ok), or why it did not load. */
  load(): Promise<CallResult>;
  /** One user call, given up at `deadline` or cancellation (then interrupted, killed if it does not stop). */
  call(fn: string, deadline: number): Promise<CallResult>;
  /** After check_completion answered running: 'poll' for the next poll, or why polling ends. */
  pause(completionDeadline: number): Promise<'poll' | 'completion' | 'deadline' | 'cancelled'>;
  /** finish in the run's own process (still alive), within `deadline`. */
  finish(deadline: number): Promise<CallResult>;
}
