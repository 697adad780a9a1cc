import type { ActiveRun } from '../worker/ProcessCodeRunner.ts';

/** Work taken before the stop, by name: settles once it has ended (a worker's handlers, HTTP requests, the scheduler's pass). */
export interface Pending {
  name: string;
  done: Promise<unknown>;
}

export interface GracefulStopParts {
  pending: Pending[];
  /** The runs in progress (the code runner's). */
  runs(): ActiveRun[];
  /** Kills every run in progress; each ends as an error with `reason`. Returns how many. */
  stopRuns(reason: string): number;
}

export interface GracefulStopOptions {
  /** SHUTDOWN_GRACE_SECONDS: how long the work taken may go on before its runs are stopped. */
  graceSeconds: number;
  /** One line for the operator (the console, the service log). */
  report(line: string): void;
  /** How long stopped runs get to record their ends before the stop goes on without them. Default 15 s. */
  settleMs?: number;
  /** How often a wait says again what it waits for. Default 5 s. */
  progressMs?: number;
  now?(): Date;
}

export interface GracefulStopResult {
  /** Runs killed when the grace period was over. */
  stopped: number;
  /** What had still not ended after that (its tasks are left as they are, for the lease reaper). */
  unsettled: string[];
}

/** Why a run stopped at the end of the grace period ended: its task's `last_run_output.error` and its session's end line. */
export const shutdownReason = (graceSeconds: number): string => `the service stopped (SHUTDOWN_GRACE_SECONDS=${graceSeconds}) before the run ended`;

const DEFAULT_SETTLE_MS = 15_000;

/** Waits for `work` (its failure included) at most `ms`. */
export const settledWithin = async (work: Promise<unknown>, ms: number): Promise<void> => {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
};
const DEFAULT_PROGRESS_MS = 5_000;

const plural = (count: number, one: string, many = `${one}s`): string => `${count} ${count === 1 ? one : many}`;

/** `task "nightly" (<laui>) (running for 125 s, session <id>)`: what an operator reads to find the run. */
export const describeRun = (run: ActiveRun, now: Date): string => {
  const task = run.taskLaui === null ? null : `task ${JSON.stringify(run.taskName ?? '')} (${run.taskLaui})`;
  const action = run.actionLaui === null ? null : `action ${JSON.stringify(run.actionName ?? '')} (${run.actionLaui})`;
  const what =
    run.kind === 'operator'
      ? (task ?? 'an operator run')
      : action !== null
        ? task !== null
          ? `${action} of ${task}`
          : action
        : run.kind === 'module'
          ? 'an AI module run'
          : 'an action run';
  const seconds = Math.max(0, Math.round((now.getTime() - run.startedAt.getTime()) / 1000));
  return `${what} (running for ${seconds} s${run.sessionId === null ? '' : `, session ${run.sessionId}`})`;
};

/**
 * A bounded stop (SIGINT/SIGTERM, issue 33). The caller has already stopped taking work (no new
 * pick-ups, HTTP closed to new requests) and hands over what was taken. This waits for it at most
 * `graceSeconds`, saying what it waits for (each run: its task, how long it has run; the seconds
 * left) at the start and every `progressMs`; then it stops the runs still going (their tasks end
 * `error` with shutdownReason, recorded by the worker's own end of the run) and waits up to
 * `settleMs` for those ends to be recorded.
 */
export const gracefulStop = async (parts: GracefulStopParts, options: GracefulStopOptions): Promise<GracefulStopResult> => {
  const now = options.now ?? (() => new Date());
  const settleMs = options.settleMs ?? DEFAULT_SETTLE_MS;
  const progressMs = options.progressMs ?? DEFAULT_PROGRESS_MS;
  const open = new Set(parts.pending);
  const everything = Promise.all(parts.pending.map((pending) => pending.done.then(() => open.delete(pending), () => open.delete(pending))));

  /** Resolves true once everything taken has ended, false at `deadline`. */
  const until = async (deadline: number): Promise<boolean> => {
    let timer: NodeJS.Timeout | undefined;
    const expiry = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), Math.max(0, deadline - now().getTime()));
    });
    try {
      return await Promise.race([everything.then(() => true as const), expiry]);
    } finally {
      clearTimeout(timer);
    }
  };

  const waitingFor = (): string => {
    const at = now();
    const runs = parts.runs();
    const others = [...open].map((pending) => pending.name);
    const listed = runs.length === 0 ? [] : [`${plural(runs.length, 'run')}: ${runs.map((run) => describeRun(run, at)).join('; ')}`];
    return [...listed, ...others].join('; and ') || 'the work taken to end';
  };

  if (open.size === 0 || (await until(now().getTime()))) return { stopped: 0, unsettled: [] };
  const deadline = now().getTime() + options.graceSeconds * 1000;
  options.report(`Waiting up to ${options.graceSeconds} s (SHUTDOWN_GRACE_SECONDS) for ${waitingFor()}`);
  for (;;) {
    const left = deadline - now().getTime();
    // The last step ends at the deadline (a timer may fire a little early: never a "0 s left" line).
    const step = Math.min(left, progressMs);
    if (left <= 0 || (await until(now().getTime() + step))) break;
    if (step === left) break;
    options.report(`Still waiting (${Math.ceil((left - step) / 1000)} s left) for ${waitingFor()}`);
  }
  if (open.size === 0) return { stopped: 0, unsettled: [] };

  const reason = shutdownReason(options.graceSeconds);
  const running = parts.runs();
  const stopped = parts.stopRuns(reason);
  options.report(
    stopped === 0
      ? `Grace period over (SHUTDOWN_GRACE_SECONDS=${options.graceSeconds}): no run left to stop; waiting up to ${Math.ceil(settleMs / 1000)} s more for ${waitingFor()}`
      : `Grace period over (SHUTDOWN_GRACE_SECONDS=${options.graceSeconds}): stopped ${plural(stopped, 'run')} (process groups killed): ${running.map((run) => describeRun(run, now())).join('; ')}. Their tasks end error: ${reason}`,
  );
  if (await until(now().getTime() + settleMs)) return { stopped, unsettled: [] };
  const unsettled = [...open].map((pending) => pending.name);
  options.report(`Gave up waiting for: ${unsettled.join('; ')}. A run whose end was not recorded stays as it is: the lease reaper ends it after the next start (stale heartbeat)`);
  return { stopped, unsettled };
};
