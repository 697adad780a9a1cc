import { NOT_IN_FLIGHT_STATES, QUEUED_STATE } from '../../shared/task/transitions.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import type { CompanionPlanner } from '../kernel/CompanionAppend.ts';
import { leasesOf } from '../queue/handler.ts';
import type { QueueEvent } from '../../shared/domain-events/queueEvents.ts';
import { taskChangeCompanion } from './changeTask.ts';
import { leaseCompanions, maxParallelismOf, sortDictOf, withCompanions } from './dispatchConnection.ts';
import type { PreparedRun } from './prepareRun.ts';
import type { RunOutcome } from './RunOutcome.ts';
import type { TaskDeps } from './taskDeps.ts';

/** A run waiting for a slot is recorded as queued unless a finishing worker already leased it (it is past the queue). */
const NOT_LEASED = [...NOT_IN_FLIGHT_STATES, QUEUED_STATE];

export interface DispatchedRuns {
  outcomes: Map<Laui, RunOutcome>;
  /** Runs of the batch whose step after the queue commit failed (they are in the queue). */
  failures: Map<Laui, unknown>;
  /** Failures sending leases that went to tasks outside the batch (waiting since earlier). */
  others: unknown[];
}

/**
 * Queueing and dispatch of prepared runs of one connection: one queue commit enqueues them all (in
 * the given order, which is their arrival order) and leases every free slot. Every task change the
 * decision calls for (queued_for_connection + queued_in_redis of a leased task, queued_for_connection
 * of one left waiting, unless a finishing worker already leased it) is a companion of that queue
 * commit (commit.ts: one transaction where the store has them, instead of a queue commit followed by
 * the task commits); each leased task is templated from the state its change was decided on, and
 * its message goes out after the commit. Throws when the queue commit fails (no run of the batch is
 * queued).
 */
export const dispatchRuns = async (deps: TaskDeps, connectionLaui: Laui, runs: ReadonlyArray<PreparedRun>, metadata: EventMetadata): Promise<DispatchedRuns> => {
  const connection = runs[0]?.connection ?? (await deps.items.peek(connectionLaui));
  const finished = runs.flatMap((run) => (run.finishedSession === null ? [] : [{ taskLaui: run.task.laui, sessionId: run.finishedSession }]));
  const byLaui = new Map(runs.map((run) => [run.task.laui, run]));
  // The tasks a decision enqueued (rule 8 drops those already queued): their queued_for_connection
  // step is written with their next state, as their state stays as the queue left it otherwise.
  let decided: ReadonlyArray<QueueEvent> | null = null;
  let enqueued = new Set<Laui>();
  const enqueuedBy = (events: ReadonlyArray<QueueEvent>): Set<Laui> => {
    if (events !== decided) {
      decided = events;
      enqueued = new Set(events.flatMap((event) => (event.type === 'TaskEnqueued' ? [event.data.task_laui] : [])));
    }
    return enqueued;
  };
  const leases = leaseCompanions(deps, connectionLaui, metadata, (laui, events) => {
    const run = byLaui.get(laui);
    return run && enqueuedBy(events).has(laui) ? run.changes : null;
  });
  const waitPositions = new Map<Laui, Position>();
  const waitFailures = new Map<Laui, unknown>();
  const plan: CompanionPlanner<QueueEvent> = async (events, fresh) => {
    waitPositions.clear();
    waitFailures.clear();
    const leasedNow = new Set(leasesOf(events).map((lease) => lease.taskLaui));
    const waiting = runs.filter((run) => enqueuedBy(events).has(run.task.laui) && !leasedNow.has(run.task.laui));
    const [leased, waits] = await Promise.all([
      leases.plan(events, fresh),
      Promise.all(
        // Waiting for a slot: record queued_for_connection unless a finishing worker already leased it.
        waiting.map(async (run) => {
          try {
            return await taskChangeCompanion(deps.eventStore, run.task.laui, run.changes, metadata, {
              fresh,
              onlyIfStateIn: NOT_LEASED,
              committed: (position) => waitPositions.set(run.task.laui, position),
              failed: (error) => waitFailures.set(run.task.laui, error),
            });
          } catch (error) {
            waitFailures.set(run.task.laui, error);
            return null;
          }
        }),
      ),
    ]);
    return [...leased, ...waits.filter((companion) => companion !== null)];
  };
  const batch = { tasks: runs.map((run) => run.entry), finished };
  const queued = await withCompanions(deps.queue.decideManyAndDispatch(connectionLaui, batch, maxParallelismOf(connection), sortDictOf(connection), metadata), plan);
  const published = await leases.publish();
  const result: DispatchedRuns = { outcomes: new Map(), failures: new Map(waitFailures), others: [] };
  for (const [laui, error] of published.failed) {
    if (byLaui.has(laui)) result.failures.set(laui, error);
    else result.others.push(error);
  }
  for (const run of runs) {
    const laui = run.task.laui;
    if (result.failures.has(laui)) continue;
    const position = published.positions.get(laui) ?? waitPositions.get(laui) ?? queued.position;
    result.outcomes.set(laui, { taskLaui: laui, executionResultId: published.sent.get(laui) ?? null, position });
  }
  return result;
};
