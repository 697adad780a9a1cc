import { hostname } from 'node:os';
import { metadataFor } from '../../shared/events.ts';
import type { BusMessage } from '../../shared/bus/MessageBus.ts';
import type { OperatorOutcome } from '../../shared/ports/CodeRunner.ts';
import { secretFieldOpener, secretStringsOf } from '../../shared/item-types/secretFields.ts';
import { endTrigger, fromStatesOf, PICKUP_STATE } from '../../shared/task/transitions.ts';
import { asks, decideRun, onlyChangesOf, type RunDecision } from '../../shared/task/runLifecycle.ts';
import type { TaskRecord } from '../../shared/task/taskFields.ts';
import type { ItemState } from '../catalog/item.ts';
import { changeTask, currentTaskState } from './changeTask.ts';
import { actionsStatusAfter, hookReferences, runHookList, type ActionStatusEntry } from '../action/runHooks.ts';
import { installStep, normaliseCodeBlock } from '../action/codeBlocks.ts';
import type { ExecuteTaskMessage } from './dispatchConnection.ts';
import { endRun } from './endRun.ts';
import { mergedConfigOf } from '../../shared/task/mergedConfig.ts';
import { runRefusal } from '../catalog/checkTaskReferences.ts';
import type { TaskDeps } from './taskDeps.ts';
import { loadSystemSettings } from '../../shared/task/loadSystemSettings.ts';
import type { TaskHeartbeats } from './HeartbeatStore.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import { runSessionLog } from '../../shared/task/runSessionLog.ts';
import type { WorkerSlots } from './WorkerSlots.ts';
import type { RunStep } from '../../shared/ports/RunTracing.ts';
import type { RunObserver } from '../../shared/ports/RunObserver.ts';

export interface WorkerDeps extends TaskDeps {
  heartbeats: TaskHeartbeats;
  /** This worker's slots (WORKER_CONCURRENCY), handed out in turn between projects. */
  slots: WorkerSlots;
  /** How often check_completion is polled and user_set_state checked. */
  pollIntervalMs: number;
  /**
   * How long a run's pick-up waits to be committed (WORKER_PICKUP_COMMIT_DEFER_MS): a run that ends
   * sooner records its pick-up with its end, in the end's commit (two events, one commit: a commit
   * and a sequential fsync fewer on every short run); a longer run commits it when this elapses, as
   * it always did. Short by default: a message delivered twice meanwhile (at least once) is told
   * apart by the pick-up's commit. Absent: 0, at once.
   */
  pickupCommitDeferMs?: number;
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
  /** One SLA minute in milliseconds (60,000 outside tests). */
  slaMinuteMs: number;
  /**
   * Aborted when the service stops (ops/shutdown): a delivered run not picked up yet is not started
   * (its message is not acknowledged: the bus delivers it again, to another worker or after a restart).
   */
  stopping?: AbortSignal;
  /** Told each pick-up (its queue wait) and each recorded end (state, run time): the service's metrics. */
  runs?: RunObserver;
}

const EXECUTOR = `${hostname()}:${process.pid}`;

/**
 * The states a run's terminal change leaves from (the table's operator rows: running). A task reset
 * or changed while its operator ran is not in them: its outcome is not written over what replaced
 * the run (the item decider would refuse that transition anyway).
 */
const ENDS_FROM = fromStatesOf('operator_success');


/** The run's end as its worker saw it: the lifecycle's decision for the operator's outcome. */
const terminalDecision = (record: TaskRecord, outcome: OperatorOutcome, now: Date): RunDecision => decideRun(record, { trigger: endTrigger(outcome.status), at: now });

/**
 * The `execute_task` consumer. Delivery is at least once: a message whose session is no longer the
 * task's current one, or whose task already left queued_in_redis, was handled before and is dropped.
 */
export const executeTask = (deps: WorkerDeps): ((message: BusMessage<ExecuteTaskMessage>) => Promise<void>) => {
  // The connection document is peeked (below): the opened content is kept per sealed value.
  const openConnection = secretFieldOpener(deps.secrets);
  const run = runMessage(deps, openConnection);
  return async (message) => {
    // A delivered run waits here for a slot, in its project's turn (WorkerSlots), not in the bus:
    // the bus hands workers more messages than they have slots. Waiting is not running: no
    // heartbeat, no pick-up, and the reaper leaves the run alone (reapStaleLeases).
    const slot = await deps.slots.acquire(message.value.task_laui, message.value.project_laui ?? '');
    try {
      await run(message);
    } finally {
      slot.release();
    }
  };
};

/** One delivered run, once it holds a slot: the session check, the pick-up, the operator and the end. */
const runMessage = (deps: WorkerDeps, openConnection: ReturnType<typeof secretFieldOpener>) => {
  return async (message: BusMessage<ExecuteTaskMessage>): Promise<void> => {
    const { task_laui: taskLaui, session_id: sessionId, dispatch_id: dispatchId, connection_laui: connectionLaui } = message.value;
    // The task's runtime fields as its stream holds them, not as the read model does: the read model
    // may lag (another process's run just advanced logical_date), and the session check must see
    // this dispatch, which was committed before it was published. A message whose session is not the
    // stream's current one, or whose task already left queued_in_redis, is a duplicate.
    const decided = await currentTaskState(deps.eventStore, taskLaui);
    if (decided.status !== 'live' || decided.fields.session_id !== sessionId || decided.fields.state !== PICKUP_STATE) {
      // Not picked up by this session (cancelled, reset, re-run or deleted while queued): its
      // session, which the dispatch line opened, ends here. A duplicate of a run that started ends nothing.
      if (decided.status !== 'none' && decided.fields.last_run_session_id !== sessionId) {
        const now = decided.status === 'live' ? String(decided.fields.state) : decided.status;
        runSessionLog(deps.logger, sessionId, { task_laui: taskLaui, task_name: decided.name, logical_date: decided.fields.logical_date ?? null }, { category: 'TASK' }).end({
          level: 'info',
          category: 'TASK_HISTORY',
          step: 'skip',
          message: `Task ${decided.name} not run in this session: the task is ${now}`,
          status: now,
        });
      }
      return;
    }
    const runtime = decided.fields as TaskRecord;
    // The definition (name, operator, actions, configs) from the read model, which has it once the
    // dispatch is applied. Documents are peeked, not copied (a copy of each was ~2.5% of the event
    // loop under task load): this function only reads them, and the read model replaces a document
    // on change, never mutates it, so what is held here stays as it was read.
    if (message.value.position) await deps.readModels.waitFor(BigInt(message.value.position), deps.readYourWritesTimeoutMs);
    const task = await deps.items.peek(taskLaui);
    if (!task) throw new Error(`Task ${taskLaui} is not in the read model yet: delivered again later`);
    const logicalDate = runtime.logical_date ?? null;
    const metadata = () => metadataFor(message.value.user_laui, deps.clock.now(), sessionId, dispatchId);
    // The run's session: the service's lines below, the operator's output (TASK) and, last, the end line.
    const session = runSessionLog(deps.logger, sessionId, { task_laui: taskLaui, task_name: task.name, logical_date: logicalDate }, { category: 'TASK' });
    const log = (level: 'info' | 'error', category: 'TASK' | 'TASK_HISTORY' | 'CELERY', step: string, text: string, extra: Record<string, unknown> = {}) =>
      session.log({ level, category, step, message: text, ...extra });

    if (deps.stopping?.aborted) throw new Error(`The worker is stopping: task ${task.name} is not picked up (its message is not acknowledged)`);
    // The run's spans (ops/tracing), children of its dispatch across the bus; steps run bare without tracing.
    const spans = deps.tracing?.worker(taskLaui, message.headers);
    const step = <T>(name: RunStep, work: () => Promise<T>): Promise<T> => (spans ? spans.step(name, work) : work());
    const started = deps.clock.now();
    // load (above) -> decide -> commit (below, off the critical path) -> perform (the first beat).
    const pickedUpDecision = decideRun(runtime, { trigger: 'PickedUp', at: started });
    const pickup = onlyChangesOf(pickedUpDecision) as Record<string, unknown> & { state?: string; data_interval_start?: string; data_interval_end?: string };
    // The running transition is committed while the operator runs, off the run's critical path, or
    // with the end when the run is over first (pickupCommitDeferMs). The terminal change waits for
    // a pick-up commit under way (same stream, so the history stays in order).
    const pickupFields = { ...pickup, executor: EXECUTOR, last_run_session_id: sessionId, task_instance: dispatchId };
    let pickedUp: Promise<unknown> | null = null;
    const commitPickup = (): void => {
      pickedUp ??= step('pickup', () => changeTask(deps.eventStore, taskLaui, pickupFields, metadata()));
      pickedUp.catch(() => undefined);
    };
    const deferMs = deps.pickupCommitDeferMs ?? 0;
    const pickupTimer = deferMs > 0 ? setTimeout(commitPickup, deferMs) : null;
    if (pickupTimer === null) commitPickup();
    if (asks(pickedUpDecision, 'StartHeartbeat')) deps.heartbeats.beat(taskLaui, started);
    // Queue wait: from the request (the run's queued_for_connection step) to this pick-up. A message
    // sent before messages carried requested_at tells nothing about it: not observed.
    const requestedAt = message.value.requested_at ? Date.parse(message.value.requested_at) : Number.NaN;
    if (Number.isFinite(requestedAt)) deps.runs?.pickedUp(Math.max(0, (started.getTime() - requestedAt) / 1000));
    log('info', 'CELERY', 'pickup', `Worker ${EXECUTOR} picked up task ${task.name}`, { state: pickup.state });

    const settings = await loadSystemSettings(deps);
    const [operator, connection, merged] = await Promise.all([
      deps.items.peek(String(task.operator_laui)),
      deps.items.peek(connectionLaui),
      mergedConfigOf(deps.items, task),
    ]);
    const context = {
      task_laui: taskLaui,
      task_name: task.name,
      session_id: sessionId,
      logical_date: logicalDate,
      data_interval_start: pickup.data_interval_start ?? null,
      data_interval_end: pickup.data_interval_end ?? null,
      parameters: merged.config.parameters,
    };
    // Rule 7: running actions fire once when the run has lasted their SLA (minutes), without blocking.
    const slaTimers = hookReferences(task, 'running_actions').flatMap((reference) => {
      const sla = Number((reference as { sla?: unknown }).sla);
      if (!Number.isFinite(sla) || sla < 0) return [];
      return [
        setTimeout(() => {
          const single = { ...task, actions: { ...(task.actions as Record<string, unknown>), running_actions: [reference] } };
          void runHookList(deps, single, 'running_actions', metadata(), merged.config.parameters)
            .then((fired) => recordHooks('running_actions', fired.statuses))
            .catch((error: unknown) => log('error', 'TASK', 'running-action', `Running action failed to start: ${String(error)}`));
        }, sla * deps.slaMinuteMs),
      ];
    });
    const recordHooks = async (kind: 'running_actions' | 'post_actions', statuses: ActionStatusEntry[]) => {
      const current = await deps.items.peek(taskLaui);
      const previous = (current?.actions_status as Record<string, unknown> | undefined) ?? {};
      const kept = kind === 'running_actions' && Array.isArray(previous.running_actions) ? (previous.running_actions as ActionStatusEntry[]) : [];
      await changeTask(deps.eventStore, taskLaui, { actions_status: actionsStatusAfter(previous, kind, [...kept, ...statuses]) }, metadata());
    };
    // Checked here again, not only when the run was queued: a right revoked while the run waited
    // for its slot keeps the connection's content from the code (the run ends `fail`, saying why).
    const refusal = await runRefusal(deps, message.value.user_laui, task, [connectionLaui]);
    if (refusal !== null) log('error', 'TASK', 'access', `Task ${task.name} not started: ${refusal}`);
    const opened = refusal === null ? openConnection(connection?.content ?? {}) : null;
    const outcome: OperatorOutcome = refusal !== null ? { status: 'fail', message: refusal, output: { error: refusal }, logs: '', logsTruncated: false } : await step('run', () => deps.runner.runOperator({
      codeblock: normaliseCodeBlock(operator?.codeblock),
      bashblock: installStep(operator?.bashblock),
      connection: opened,
      payload: message.value.payload,
      context,
      limits: deps.limits,
      pollIntervalMs: deps.pollIntervalMs,
      checkCompletionTimeoutMs: settings.check_completion_timeout_seconds * 1000,
      isCancelled: async () => (await deps.items.peek(taskLaui))?.user_set_state === 'cancel',
      onHeartbeat: () => deps.heartbeats.beat(taskLaui, deps.clock.now()),
      // An operator opts into process reuse (faster, less isolated: docs/decisions.md), in a process
      // of its own and of the user the run acts as (a run without a user gets a fresh one).
      reuse: operator?.reuse_process === true,
      reuseScope: operator && message.value.user_laui !== null ? { itemLaui: operator.laui, actorLaui: message.value.user_laui } : null,
      // Its stdout and stderr, line by line, in the session (the connection's secrets masked).
      output: session.output(() => secretStringsOf(opened)),
    }));

    for (const timer of slaTimers) clearTimeout(timer);
    const ended = deps.clock.now();
    if (pickupTimer !== null) clearTimeout(pickupTimer);
    // A failed pickup commit fails the message (the bus redelivers; the session check decides).
    if (pickedUp !== null) await pickedUp;
    // Not committed yet: it goes with the end (its span, empty, says the pick-up happened).
    const pickupWithEnd = pickedUp === null;
    if (pickupWithEnd) await step('pickup', async () => undefined);
    const endsFrom = pickupWithEnd ? [PICKUP_STATE, ...ENDS_FROM] : ENDS_FROM;
    // Decided on the task as its stream holds it when the terminal commit is decided (this run's
    // pickup included), not on a lagging read model nor on a read taken before: the next logical
    // date follows whatever logical date the commit lands on (a change made meanwhile by another
    // process fails the commit's expected revision, and the changes are made again on it). The
    // last decision is the committed one: what the logging and post actions below use (a terminal
    // change is decided before anything is written, so it is set by then). Once the terminal change
    // is written, a decision made again (the queue commit it goes with is retried on a store
    // without multi-stream transactions) finds the run ended and writes nothing: `end` stays the
    // written one.
    const afterPickup = { ...runtime, ...pickup };
    let end: RunDecision | undefined;
    let written = false;
    const terminal = (state: ItemState) => {
      let record = state.status === 'live' ? (state.fields as TaskRecord) : afterPickup;
      const steps: Array<Record<string, unknown>> = [];
      // The pick-up goes first when it was not committed: only while the task still waits for this
      // very dispatch (reset, re-run or deleted meanwhile: nothing of this run is recorded).
      if (pickupWithEnd) {
        if (state.status === 'live' && (record.state !== PICKUP_STATE || state.fields.session_id !== sessionId)) return [];
        steps.push(pickupFields);
        record = { ...record, ...pickupFields } as TaskRecord;
      }
      // A run reset or changed while its operator ran is not ended over what replaced it.
      if (!ENDS_FROM.includes(String(record.state))) return [];
      const decided = terminalDecision(record, outcome, ended);
      if (!written) end = decided;
      return [...steps, {
        ...onlyChangesOf(decided),
        duration: Math.trunc((ended.getTime() - started.getTime()) / 1000),
        last_run_output: outcome.output,
        last_run_date: ended.toISOString(),
        task_instance_end_date: ended.toISOString(),
        latest_heartbeat: ended.toISOString(),
      }];
    };
    const endState = () => (end === undefined ? undefined : onlyChangesOf(end).state);
    const finishMetadata = metadata();
    const ending = () => {
      deps.heartbeats.forget(taskLaui);
      deps.runs?.ended(String(endState() ?? outcome.status), (ended.getTime() - started.getTime()) / 1000);
      if (end !== undefined && asks(end, 'DispatchNextRun')) log('info', 'TASK', 'catch-up', 'next_run_date already due: the scheduler dispatches the next run at once');
      // The session's last line.
      session.end({
        level: outcome.status === 'success' ? 'info' : 'error',
        category: 'TASK_HISTORY',
        step: 'finish',
        message: `Task ${task.name} ended ${String(endState())}${'message' in outcome ? `: ${outcome.message}` : ''}`,
        status: endState(),
        duration_seconds: (ended.getTime() - started.getTime()) / 1000,
      });
    };
    // Terminal state, finish (spec 3.1: leave the connection queue) and the freed slot's next
    // lease in one commit, the terminal state first: the slot is never held past the state that
    // ends the run.
    try {
      await step('end', () =>
        endRun(deps, connectionLaui, finishMetadata, { taskLaui, slot: { sessionId, reason: 'finished' }, terminal: { changes: terminal, endsFrom, committed: () => (written = true) } }),
      );
    } catch (error) {
      spans?.finish(written ? String(endState()) : null, error);
      try {
        // The run's outcome is not lost with the queue commit: it is written alone, and the lease it
        // still holds is freed by the reaper, as when the finish fails after the terminal change.
        if (!written) await endRun(deps, connectionLaui, finishMetadata, { taskLaui, slot: null, terminal: { changes: terminal, endsFrom } });
        ending();
      } catch {
        // The outcome is not recorded: the bus delivers the message again (a pickup that was not
        // committed runs again in this session) or the reaper ends the run (its line ends the session).
        if (!session.ended) log('error', 'TASK_HISTORY', 'finish', `Task ${task.name}: recording the end of the run failed: ${String(error)}`);
      }
      throw error;
    }
    spans?.finish(String(endState() ?? outcome.status));
    ending();
    // Post actions (the end's RunPostActions effect): after the operator finished, fire-and-forget;
    // they never change the terminal state.
    if ((end === undefined || asks(end, 'RunPostActions')) && hookReferences(task, 'post_actions').length > 0) {
      void runHookList(deps, { ...task, ...(end === undefined ? {} : onlyChangesOf(end)) }, 'post_actions', metadata(), merged.config.parameters)
        .then((post) => recordHooks('post_actions', post.statuses))
        .catch((error: unknown) => log('error', 'TASK', 'post-action', `Post actions failed to run: ${String(error)}`));
    }
  };
};
