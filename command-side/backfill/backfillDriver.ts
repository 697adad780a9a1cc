import { AppError } from '../../shared/errors.ts';
import type { RecordedEvent } from '../../shared/event-store/EventStore.ts';
import { metadataFor, type EventMetadata } from '../../shared/events.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { backfillStream } from '../../shared/task/backfill/backfillEvents.ts';
import { idleRunners, pendingSteps, runnerOf, runnersOf, runningSteps, type Backfill, type BackfillStep } from '../../shared/task/backfill/backfillState.ts';
import { IN_FLIGHT_STATES, INITIAL_STATE, manualRunRefusal } from '../../shared/task/transitions.ts';
import { handleCommand } from '../kernel/handleCommand.ts';
import { itemStream, type ItemState } from '../catalog/item.ts';
import { runRefusal } from '../catalog/checkTaskReferences.ts';
import { currentTaskState } from '../task/changeTask.ts';
import { dispatchRuns } from '../task/dispatchRuns.ts';
import { prepareRun } from '../task/prepareRun.ts';
import { runReads } from '../task/runReads.ts';
import type { TaskDeps } from '../task/taskDeps.ts';
import { backfillDecider, type BackfillCommand } from './backfillDecider.ts';
import { taskBackfills } from './backfillCommands.ts';
import type { BackfillRegistry } from './backfillRegistry.ts';
import { closeLanes, createLane } from './backfillLanes.ts';

/**
 * The backfill driver (issue 36), in the scheduler role. Stateless between passes but for caches:
 * everything it acts on is in the log, so a restarted driver resumes where the last one stopped.
 * A pass, for each backfill not completed:
 * 1. reads each runner's events (the task's since the backfill was requested, a lane's whole): a run
 *    is the events naming the backfill (`backfill_id`), from its TaskQueued (its
 *    `changes.logical_date` is the step) to its end;
 * 2. records the end of each step whose run ended (BackfillRunEnded; the last completes it, and the
 *    lanes are soft-deleted);
 * 3. starts the oldest pending steps while fewer than max_active_runs are in flight, each on an idle
 *    runner: the task, or a lane (a copy of the task, backfillLanes.ts) opened when every runner is
 *    busy; a task runs one run at a time, so a cron run in flight makes the task wait, it does not
 *    fail the backfill. A run goes through the same pipeline as POST /task/run (validation,
 *    pre-actions, connection queue and its max_parallelism, dispatch) with the step's logical date,
 *    acting as the user who asked for the backfill;
 * 4. asks again for a started step whose run never reached the task (a crash between the two, or a
 *    request rule 8 dropped because the cron's run got there first).
 * A refusal before the queue (rights revoked, task invalid or cancelled) fails that step and
 * cancels the backfill: every later step would be refused alike.
 */
export interface BackfillDriverDeps extends TaskDeps {
  registry: BackfillRegistry;
}

export interface BackfillDriver {
  /** Starts the periodic passes. */
  start(): void;
  /** A pass now (a backfill was just requested or cancelled). */
  wake(): void;
  /** No new pass; resolves when the current one ends. */
  stop(): Promise<void>;
}

const END_EVENTS: ReadonlySet<string> = new Set(['TaskSucceeded', 'TaskErrored', 'TaskTimedOut', 'TaskCancelled', 'TaskFailed', 'TaskReset']);

/** What the task's log says of a backfill's runs so far. */
interface RunsSeen {
  revision: number;
  current: string | null;
  queued: Set<string>;
  sessions: Map<string, string>;
  ended: Map<string, string>;
}

const changesOf = (event: RecordedEvent): Record<string, unknown> => {
  const changes = (event.data as { changes?: unknown }).changes;
  return typeof changes === 'object' && changes !== null ? (changes as Record<string, unknown>) : {};
};

/** Folds a task's events into what they say of backfill `id`'s runs. */
export const seeRuns = (seen: RunsSeen, id: Laui, events: ReadonlyArray<RecordedEvent>): RunsSeen => {
  for (const event of events) {
    seen.revision = event.revision;
    if ((event.data as { backfill_id?: unknown }).backfill_id !== id) continue;
    const changes = changesOf(event);
    if (event.type === 'TaskQueued' && typeof changes.logical_date === 'string') {
      seen.current = changes.logical_date;
      seen.queued.add(changes.logical_date);
    }
    if (seen.current === null) continue;
    if (typeof changes.session_id === 'string') seen.sessions.set(seen.current, changes.session_id);
    if (END_EVENTS.has(event.type)) {
      seen.ended.set(seen.current, event.type === 'TaskReset' ? 'reset' : String((event.data as { to?: unknown }).to ?? 'error'));
      seen.current = null;
    }
  }
  return seen;
};

/** How often a driver looks at the backfills not completed (a run's end is seen at most this late). */
export const BACKFILL_PASS_MS = 1000;
const UNREQUESTED_AFTER_MS = 60_000;
const LOST_AFTER_MS = 10_000;
const SOON_MS = 50;

export const backfillDriver = (deps: BackfillDriverDeps, intervalMs: number = BACKFILL_PASS_MS): BackfillDriver => {
  const completed = new Set<Laui>();
  const seen = new Map<Laui, Map<Laui, RunsSeen>>();
  let timer: NodeJS.Timeout | undefined;
  let passing: Promise<void> = Promise.resolve();
  let stopped = false;
  const log = (level: 'info' | 'warning' | 'error', backfill: Backfill, message: string) =>
    deps.logger.log({ level, category: 'CRON', step: 'backfill', message, task_laui: backfill.taskLaui, backfill_id: backfill.id });

  const decide = async (backfill: Backfill, command: BackfillCommand, metadata: EventMetadata): Promise<Backfill | null> => {
    const result = await handleCommand({ eventStore: deps.eventStore, streamId: backfillStream(backfill.taskLaui), decider: backfillDecider, command, metadata });
    return result.events.length === 0 ? null : (result.state.backfills[backfill.id] ?? null);
  };

  /** Step 4's request and step 3's: the pipeline of POST /task/run; null when queued, else why not. */
  const run = async (backfill: Backfill, logicalDate: string, task: ItemDoc, metadata: EventMetadata): Promise<{ state: string; detail: string } | null> => {
    const principal = backfill.requestedBy === null ? null : await deps.access.principalOf(backfill.requestedBy);
    if (principal === null) return { state: 'fail', detail: 'Access denied: the user who asked for the backfill no longer exists' };
    if (!(await deps.access.can(principal, task, 'EDIT'))) return { state: 'fail', detail: `Access denied: user ${principal.username || principal.laui} no longer has EDIT on the task` };
    const refusal = manualRunRefusal(String(task.state ?? INITIAL_STATE)) ?? (await runRefusal(deps, principal.laui, task));
    if (refusal !== null) return { state: 'fail', detail: refusal };
    try {
      const prepared = await prepareRun(deps, task, { origin: 'user', logicalDate, backfillId: backfill.id }, metadata, runReads(deps));
      if (!prepared.ready) return { state: 'skipped', detail: 'a pre-action failed or returned false' };
      const dispatched = await dispatchRuns(deps, prepared.run.connectionLaui, [prepared.run], metadata);
      const failure = dispatched.failures.get(task.laui);
      if (failure !== undefined) throw failure;
      return null;
    } catch (error) {
      if (error instanceof AppError && error.status < 500) return { state: 'fail', detail: typeof error.detail === 'string' ? error.detail : JSON.stringify(error.detail) };
      throw error;
    }
  };

  /** The runner's current state, from its stream (the read model's copy may lag a run that just ended). */
  const runnerNow = async (laui: Laui): Promise<{ item: ItemState; inFlight: boolean; doc: ItemDoc | null }> => {
    const item = await currentTaskState(deps.eventStore, laui);
    const doc = await deps.items.peek(laui);
    if (item.status !== 'live' || !doc) return { item, inFlight: false, doc: null };
    return { item, inFlight: (IN_FLIGHT_STATES as readonly string[]).includes(String(item.fields.state)), doc: { ...doc, ...item.fields } as ItemDoc };
  };

  /** Starts (or asks again for) `step` on `runner`; a refusal ends the step, and a `fail` cancels the backfill. */
  const startOn = async (backfill: Backfill, step: string, runner: ItemDoc, metadata: EventMetadata): Promise<Backfill> => {
    const refused = await run(backfill, step, runner, metadata);
    if (refused === null) {
      log('info', backfill, `Backfill ${backfill.id}: run of ${step} queued${runner.laui === backfill.taskLaui ? '' : ` on lane ${runner.laui}`}`);
      return backfill;
    }
    log('warning', backfill, `Backfill ${backfill.id}: the run of ${step} was not queued (${refused.detail})`);
    const ended = (await decide(backfill, { kind: 'endRun', backfillId: backfill.id, logicalDate: step, state: refused.state, sessionId: null, detail: refused.detail, at: metadata.at }, metadata)) ?? backfill;
    if (refused.state === 'fail' && ended.completedAt === null) {
      return (await decide(ended, { kind: 'cancel', backfillId: backfill.id, by: null, reason: refused.detail, at: metadata.at }, metadata)) ?? ended;
    }
    return ended;
  };

  const drive = async (start: Backfill): Promise<void> => {
    let backfill: Backfill = start;
    const metadata = metadataFor(backfill.requestedBy, deps.clock.now(), `backfill-${backfill.id}`);
    // What each runner's stream says of the backfill's runs (the task's from the request on, a lane's whole).
    const byRunner = seen.get(backfill.id) ?? new Map<Laui, RunsSeen>();
    seen.set(backfill.id, byRunner);
    for (const runner of runnersOf(backfill)) {
      const runs = byRunner.get(runner) ?? { revision: runner === backfill.taskLaui ? backfill.taskRevision : -1, current: null, queued: new Set(), sessions: new Map(), ended: new Map() };
      byRunner.set(runner, seeRuns(runs, backfill.id, await deps.eventStore.readStream(itemStream(runner), { fromRevision: runs.revision + 1 })));
    }
    const runsOf = (step: BackfillStep): RunsSeen | undefined => byRunner.get(runnerOf(backfill, step));
    for (const step of runningSteps(backfill)) {
      const runs = runsOf(step);
      const state = runs?.ended.get(step.logical_date);
      if (runs === undefined || state === undefined) continue;
      const session = runs.sessions.get(step.logical_date) ?? null;
      backfill = (await decide(backfill, { kind: 'endRun', backfillId: backfill.id, logicalDate: step.logical_date, state, sessionId: session, detail: null, at: metadata.at }, metadata)) ?? backfill;
      log(state === 'success' ? 'info' : 'warning', backfill, `Backfill ${backfill.id}: the run of ${step.logical_date} ended ${state}`);
    }
    if (backfill.completedAt !== null) return await closeLanes(deps, backfill, metadata);
    const task = await runnerNow(backfill.taskLaui);
    if (task.item.status !== 'live') {
      if (!backfill.cancelled) backfill = (await decide(backfill, { kind: 'cancel', backfillId: backfill.id, by: null, reason: 'the task was deleted', at: metadata.at }, metadata)) ?? backfill;
      if (backfill.completedAt !== null) await closeLanes(deps, backfill, metadata);
      return;
    }
    // A lane named by BackfillLaneOpened whose creation a stop cut short is created now.
    for (const [index, laui] of backfill.lanes.entries()) {
      if ((await runnerNow(laui)).item.status !== 'none') continue;
      await createLane(deps, task.item, backfill, index + 1, laui, metadata);
      soon();
    }
    // Lost: started a while ago and its run is not in its runner's log (another scheduler process
    // may be between the two steps of a start it just made: it is given time to finish it).
    const lostBefore = deps.clock.now().getTime() - LOST_AFTER_MS;
    for (const step of runningSteps(backfill)) {
      if (runsOf(step)?.queued.has(step.logical_date) || Date.parse(step.started_at ?? '') > lostBefore) continue;
      const runner = await runnerNow(runnerOf(backfill, step));
      if (runner.doc !== null && !runner.inFlight) backfill = await startOn(backfill, step.logical_date, runner.doc, metadata);
    }
    // New steps, oldest first, while fewer than max_active_runs are in flight: each on an idle runner
    // (one whose own state is not in flight either: a cron run of the task makes the task wait, not
    // the backfill fail), a new lane when every runner is busy and max_active_runs allows one more.
    for (;;) {
      const next = pendingSteps(backfill)[0]?.logical_date;
      if (next === undefined || backfill.cancelled || backfill.completedAt !== null || runningSteps(backfill).length >= backfill.maxActiveRuns) return;
      let free: ItemDoc | null = null;
      for (const laui of idleRunners(backfill)) {
        const runner = await runnerNow(laui);
        if (runner.doc !== null && !runner.inFlight) {
          free = runner.doc;
          break;
        }
      }
      if (free === null) {
        const lane = backfill.lanes.length + 1;
        if (lane >= backfill.maxActiveRuns) return;
        const laneLaui = newLaui(deps.clock.now());
        const opened = await decide(backfill, { kind: 'openLane', backfillId: backfill.id, lane, laneLaui, at: metadata.at }, metadata);
        if (opened === null) return;
        backfill = opened;
        await createLane(deps, task.item, backfill, lane, laneLaui, metadata);
        log('info', backfill, `Backfill ${backfill.id}: lane ${lane} opened (${laneLaui})`);
        // Its read-model copy follows the creation: the next pass, soon, starts a step on it.
        soon();
        return;
      }
      const started = await decide(backfill, { kind: 'startRun', backfillId: backfill.id, logicalDate: next, runTaskLaui: free.laui, at: metadata.at }, metadata);
      if (started === null) return;
      backfill = await startOn(started, next, free, metadata);
    }
  };

  const pass = async (): Promise<void> => {
    const byTask = new Map<Laui, Array<{ id: Laui; at: string }>>();
    for (const { backfillId, taskLaui, at } of await deps.registry.all()) {
      if (!completed.has(backfillId)) byTask.set(taskLaui, [...(byTask.get(taskLaui) ?? []), { id: backfillId, at }]);
    }
    // A registration whose request is not in the task's stream a minute later never will be (refused).
    const settled = deps.clock.now().getTime() - UNREQUESTED_AFTER_MS;
    for (const [taskLaui, ids] of byTask) {
      if (stopped) return;
      const state = await taskBackfills(deps.eventStore, taskLaui);
      for (const { id, at } of ids) {
        const backfill = state.backfills[id];
        if (backfill === undefined && Date.parse(at) > settled) continue;
        // Unknown: a request refused after its registration. Completed: nothing more to do.
        if (backfill === undefined || backfill.completedAt !== null) {
          completed.add(id);
          seen.delete(id);
          // A driver stopped between the completion and the lanes' deletion deletes them now.
          if (backfill !== undefined && backfill.lanes.length > 0) {
            await closeLanes(deps, backfill, metadataFor(backfill.requestedBy, deps.clock.now(), `backfill-${backfill.id}`)).catch((error: unknown) => log('error', backfill, `Backfill ${backfill.id}: its lanes were not deleted: ${String(error)}`));
          }
          continue;
        }
        try {
          await drive(backfill);
        } catch (error) {
          log('error', backfill, `Backfill ${backfill.id}: pass failed, tried again at the next one: ${String(error)}`);
        }
      }
    }
  };

  let queued = false;
  let started = false;
  let soonTimer: NodeJS.Timeout | undefined;
  /** Another pass shortly (a lane just created reaches the read model in a moment). */
  const soon = () => {
    if (soonTimer !== undefined || stopped) return;
    soonTimer = setTimeout(() => {
      soonTimer = undefined;
      schedule();
    }, SOON_MS);
    soonTimer.unref();
  };
  const schedule = () => {
    // One pass waiting is enough: it reads everything anew. A process without the scheduler part
    // (an api role) never started its driver: the scheduler's own passes find the backfill.
    if (queued || !started) return;
    queued = true;
    passing = passing.then(() => {
      queued = false;
      return stopped ? undefined : pass();
    }).catch((error: unknown) => {
      deps.logger.log({ level: 'error', category: 'CRON', step: 'backfill', message: `Backfill pass failed: ${String(error)}` });
    });
  };

  return {
    start() {
      stopped = false;
      started = true;
      timer = setInterval(schedule, intervalMs);
      timer.unref();
      schedule();
    },
    wake: schedule,
    async stop() {
      stopped = true;
      clearInterval(timer);
      clearTimeout(soonTimer);
      await passing;
    },
  };
};
