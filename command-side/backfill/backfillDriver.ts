import { AppError } from '../../shared/errors.ts';
import type { RecordedEvent } from '../../shared/event-store/EventStore.ts';
import { metadataFor, type EventMetadata } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { backfillStream } from '../../shared/task/backfill/backfillEvents.ts';
import { pendingSteps, runningSteps, type Backfill } from '../../shared/task/backfill/backfillState.ts';
import { IN_FLIGHT_STATES, manualRunRefusal } from '../../shared/task/transitions.ts';
import { handleCommand, loadRevision } from '../kernel/handleCommand.ts';
import { itemDecider } from '../catalog/decide.ts';
import { itemStream } from '../catalog/item.ts';
import { itemStatesOf } from '../catalog/itemStates.ts';
import { runRefusal } from '../catalog/checkTaskReferences.ts';
import { dispatchRuns } from '../task/dispatchRuns.ts';
import { prepareRun } from '../task/prepareRun.ts';
import { runReads } from '../task/runReads.ts';
import type { TaskDeps } from '../task/taskDeps.ts';
import { backfillDecider, type BackfillCommand } from './backfillDecider.ts';
import { taskBackfills } from './backfillCommands.ts';
import type { BackfillRegistry } from './backfillRegistry.ts';

/**
 * The backfill driver (issue 36), in the scheduler role. Stateless between passes but for caches:
 * everything it acts on is in the log, so a restarted driver resumes where the last one stopped.
 * A pass, for each backfill not completed:
 * 1. reads the task's events since the backfill was requested: a run is the events naming the
 *    backfill (`backfill_id`), from its TaskQueued (its `changes.logical_date` is the step) to its end;
 * 2. records the end of each step whose run ended (BackfillRunEnded; the last completes it);
 * 3. starts the oldest pending step when no run of the task is in flight (a task runs one run at a
 *    time: a cron run in flight makes the backfill wait, it does not fail it), through the same
 *    pipeline as POST /task/run (validation, pre-actions, connection queue, dispatch) with the
 *    step's logical date, acting as the user who asked for the backfill;
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

export const backfillDriver = (deps: BackfillDriverDeps, intervalMs: number = BACKFILL_PASS_MS): BackfillDriver => {
  const completed = new Set<Laui>();
  const seen = new Map<Laui, RunsSeen>();
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
    const refusal = manualRunRefusal(String(task.state ?? 'scheduled')) ?? (await runRefusal(deps, principal.laui, task));
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

  const drive = async (start: Backfill): Promise<void> => {
    let backfill: Backfill = start;
    const metadata = metadataFor(backfill.requestedBy, deps.clock.now(), `backfill-${backfill.id}`);
    const runs = seen.get(backfill.id) ?? { revision: backfill.taskRevision, current: null, queued: new Set(), sessions: new Map(), ended: new Map() };
    seen.set(backfill.id, seeRuns(runs, backfill.id, await deps.eventStore.readStream(itemStream(backfill.taskLaui), { fromRevision: runs.revision + 1 })));
    for (const step of runningSteps(backfill)) {
      const state = runs.ended.get(step.logical_date);
      if (state === undefined) continue;
      const session = runs.sessions.get(step.logical_date) ?? null;
      backfill = (await decide(backfill, { kind: 'endRun', backfillId: backfill.id, logicalDate: step.logical_date, state, sessionId: session, detail: null, at: metadata.at }, metadata)) ?? backfill;
      log(state === 'success' ? 'info' : 'warning', backfill, `Backfill ${backfill.id}: the run of ${step.logical_date} ended ${state}`);
    }
    if (backfill.completedAt !== null) return;
    const item = (await loadRevision(deps.eventStore, itemStream(backfill.taskLaui), itemDecider, itemStatesOf(deps.eventStore))).state;
    const doc = await deps.items.peek(backfill.taskLaui);
    if (item.status !== 'live' || !doc) {
      if (!backfill.cancelled) await decide(backfill, { kind: 'cancel', backfillId: backfill.id, by: null, reason: 'the task was deleted', at: metadata.at }, metadata);
      return;
    }
    if ((IN_FLIGHT_STATES as readonly string[]).includes(String(item.fields.state))) return;
    // The task as its stream holds it: the read model's copy may lag the run that just ended.
    const task = { ...doc, ...item.fields } as ItemDoc;
    // Lost: started a while ago and its run is not in the task's log (another scheduler process
    // may be between the two steps of a start it just made: it is given time to finish it).
    const lostBefore = deps.clock.now().getTime() - LOST_AFTER_MS;
    const lost = runningSteps(backfill).find((step) => !runs.queued.has(step.logical_date) && Date.parse(step.started_at ?? '') <= lostBefore);
    let step = lost?.logical_date ?? null;
    if (step === null) {
      // One run of a task at a time: the next step once no step of the backfill is in flight.
      const next = pendingSteps(backfill)[0]?.logical_date;
      if (runningSteps(backfill).length > 0 || next === undefined) return;
      const started = await decide(backfill, { kind: 'startRun', backfillId: backfill.id, logicalDate: next, at: metadata.at }, metadata);
      if (started === null) return;
      backfill = started;
      step = next;
    }
    const refused = await run(backfill, step, task, metadata);
    if (refused === null) {
      log('info', backfill, `Backfill ${backfill.id}: run of ${step} queued`);
      return;
    }
    log('warning', backfill, `Backfill ${backfill.id}: the run of ${step} was not queued (${refused.detail})`);
    const ended = await decide(backfill, { kind: 'endRun', backfillId: backfill.id, logicalDate: step, state: refused.state, sessionId: null, detail: refused.detail, at: metadata.at }, metadata);
    if (refused.state === 'fail' && ended !== null && ended.completedAt === null) {
      await decide(ended, { kind: 'cancel', backfillId: backfill.id, by: null, reason: refused.detail, at: metadata.at }, metadata);
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
      await passing;
    },
  };
};
