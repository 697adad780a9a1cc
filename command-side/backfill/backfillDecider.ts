import { badRequest, conflict, notFound } from '../../shared/errors.ts';
import type { Laui } from '../../shared/ids.ts';
import { ADHOC, isValidFrequency } from '../../shared/task/cron.ts';
import { iso } from '../../shared/task/dates.ts';
import type { BackfillEvent } from '../../shared/task/backfill/backfillEvents.ts';
import { backfillSteps, MAX_ACTIVE_RUNS_LIMIT, MAX_BACKFILL_STEPS } from '../../shared/task/backfill/backfillSteps.ts';
import { evolveTaskBackfills, idleRunners, initialTaskBackfills, pendingSteps, runningSteps, type Backfill, type TaskBackfills } from '../../shared/task/backfill/backfillState.ts';
import type { Decider } from '../kernel/Decider.ts';

/**
 * The backfill aggregate (issue 36), one per task (`backfill-<task_laui>`): pure, time and ids on
 * the command. The driver (backfillDriver.ts) asks it before every step, so its answers are what a
 * restarted driver resumes from:
 * - request: the 400s of a backfill that cannot run, 409 while another backfill of the task has not
 *   completed (one at a time: the task runs one run at a time anyway);
 * - openLane: the next lane (a copy of the task that runs one more step at once), only while the
 *   backfill runs and has fewer than max_active_runs runners; anything else decides nothing;
 * - startRun: only the oldest pending step, only while fewer than max_active_runs are in flight and
 *   the backfill is not cancelled, on a runner (the task or one of its lanes) with no step in flight;
 *   anything else decides nothing (a second driver, a replay);
 * - endRun: only a step in flight; the last one to end completes the backfill;
 * - cancel: 404 unknown, 409 completed, nothing when already cancelled; completes at once when no
 *   run is in flight, else when the last one ends.
 */
export type BackfillCommand =
  | {
      kind: 'request';
      backfillId: Laui;
      taskLaui: Laui;
      projectLaui: Laui | null;
      frequency: string;
      startDate: Date;
      endDate: Date;
      maxActiveRuns: number;
      taskRevision: number;
      requestedBy: Laui | null;
      at: string;
    }
  | { kind: 'openLane'; backfillId: Laui; lane: number; laneLaui: Laui; at: string }
  | { kind: 'startRun'; backfillId: Laui; logicalDate: string; runTaskLaui: Laui; at: string }
  | { kind: 'endRun'; backfillId: Laui; logicalDate: string; state: string; sessionId: string | null; detail: string | null; at: string }
  | { kind: 'cancel'; backfillId: Laui; by: Laui | null; reason: string | null; at: string };

const requestRefusal = (command: Extract<BackfillCommand, { kind: 'request' }>): string | null => {
  if (command.frequency === ADHOC || !isValidFrequency(command.frequency)) return `Backfill needs a scheduled task: task ${command.taskLaui} has frequency ${command.frequency}`;
  if (command.startDate.getTime() > command.endDate.getTime()) return 'start_date must be earlier than or equal to end_date';
  if (!Number.isInteger(command.maxActiveRuns) || command.maxActiveRuns < 1 || command.maxActiveRuns > MAX_ACTIVE_RUNS_LIMIT) {
    return `max_active_runs must be an integer from 1 to ${MAX_ACTIVE_RUNS_LIMIT}`;
  }
  return null;
};

/** The completion an end or a cancellation leads to: nothing in flight and nothing (more) to start. */
const completion = (backfill: Backfill, at: string): BackfillEvent[] => {
  if (backfill.completedAt !== null || runningSteps(backfill).length > 0) return [];
  const notRun = pendingSteps(backfill).length;
  if (notRun > 0 && !backfill.cancelled) return [];
  const succeeded = backfill.steps.filter((step) => step.state === 'success').length;
  return [{ type: 'BackfillCompleted', data: { backfill_id: backfill.id, succeeded, failed: backfill.steps.length - succeeded - notRun, not_run: notRun, at } }];
};

const after = (backfill: Backfill, events: BackfillEvent[]): Backfill =>
  events.reduce((state, event) => evolveTaskBackfills(state, event), { backfills: { [backfill.id]: backfill }, active: backfill.id } as TaskBackfills).backfills[backfill.id] as Backfill;

export const decideBackfill = (command: BackfillCommand, state: TaskBackfills): BackfillEvent[] => {
  const backfill = state.backfills[command.backfillId];
  switch (command.kind) {
    case 'request': {
      if (backfill !== undefined) return [];
      const refusal = requestRefusal(command);
      if (refusal !== null) throw badRequest(refusal);
      const steps = backfillSteps(command.frequency, command.startDate, command.endDate);
      if (steps === null) throw badRequest(`Too many runs: a backfill runs at most ${MAX_BACKFILL_STEPS} cron steps; split the range`);
      if (steps.length === 0) throw badRequest(`No cron step of ${command.frequency} between start_date and end_date`);
      if (state.active !== null) throw conflict(`Backfill ${state.active} of task ${command.taskLaui} is still running: cancel it or wait until it completes`);
      return [
        {
          type: 'BackfillRequested',
          data: {
            backfill_id: command.backfillId,
            task_laui: command.taskLaui,
            project_laui: command.projectLaui,
            frequency: command.frequency,
            start_date: iso(command.startDate),
            end_date: iso(command.endDate),
            max_active_runs: command.maxActiveRuns,
            logical_dates: steps,
            task_revision: command.taskRevision,
            requested_by: command.requestedBy,
            at: command.at,
          },
        },
      ];
    }
    case 'openLane': {
      if (backfill === undefined || backfill.cancelled || backfill.completedAt !== null) return [];
      // Lanes are numbered from 1 (the task itself is runner 0): a lane is opened once, in order.
      if (command.lane !== backfill.lanes.length + 1 || command.lane >= backfill.maxActiveRuns) return [];
      return [{ type: 'BackfillLaneOpened', data: { backfill_id: backfill.id, lane: command.lane, task_laui: command.laneLaui, at: command.at } }];
    }
    case 'startRun': {
      if (backfill === undefined || backfill.cancelled || backfill.completedAt !== null) return [];
      if (pendingSteps(backfill)[0]?.logical_date !== command.logicalDate) return [];
      if (runningSteps(backfill).length >= backfill.maxActiveRuns) return [];
      if (!idleRunners(backfill).includes(command.runTaskLaui)) return [];
      // The task's own runs carry no runner: events written before lanes read the same.
      const runner = command.runTaskLaui === backfill.taskLaui ? {} : { run_task_laui: command.runTaskLaui };
      return [{ type: 'BackfillRunStarted', data: { backfill_id: backfill.id, logical_date: command.logicalDate, ...runner, at: command.at } }];
    }
    case 'endRun': {
      if (backfill === undefined || !runningSteps(backfill).some((step) => step.logical_date === command.logicalDate)) return [];
      const ended: BackfillEvent[] = [
        {
          type: 'BackfillRunEnded',
          data: { backfill_id: backfill.id, logical_date: command.logicalDate, state: command.state, session_id: command.sessionId, detail: command.detail, at: command.at },
        },
      ];
      return [...ended, ...completion(after(backfill, ended), command.at)];
    }
    case 'cancel': {
      if (backfill === undefined) throw notFound('Backfill not found');
      if (backfill.completedAt !== null) throw conflict(`Backfill ${backfill.id} has already completed`);
      if (backfill.cancelled) return [];
      const cancelled: BackfillEvent[] = [{ type: 'BackfillCancelled', data: { backfill_id: backfill.id, by: command.by, reason: command.reason, at: command.at } }];
      return [...cancelled, ...completion(after(backfill, cancelled), command.at)];
    }
  }
};

export const backfillDecider: Decider<TaskBackfills, BackfillCommand, BackfillEvent> = {
  initialState: initialTaskBackfills,
  evolve: evolveTaskBackfills,
  decide: decideBackfill,
};
