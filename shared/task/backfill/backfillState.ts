import type { Laui } from '../../ids.ts';
import type { BackfillEvent } from './backfillEvents.ts';
import { stepIntervalEnd } from './backfillSteps.ts';

/** Where a step stands: not started, its run in flight, or how it ended (a task end state, `skipped`, `fail`, `reset`). */
export type StepState = 'pending' | 'running' | string;

export interface BackfillStep {
  logical_date: string;
  state: StepState;
  session_id: string | null;
  detail: string | null;
  started_at: string | null;
  ended_at: string | null;
  /** The task that runs it: the backfill's task, or one of its lanes (max_active_runs above 1). */
  run_task_laui: Laui | null;
}

export type BackfillStatus = 'running' | 'cancelled' | 'completed';

export interface Backfill {
  id: Laui;
  taskLaui: Laui;
  projectLaui: Laui | null;
  frequency: string;
  startDate: string;
  endDate: string;
  maxActiveRuns: number;
  taskRevision: number;
  requestedBy: Laui | null;
  requestedAt: string;
  /** Cancelled: no new run starts (a run in flight ends normally). Completed: nothing runs any more. */
  cancelled: boolean;
  completedAt: string | null;
  steps: BackfillStep[];
  /** The lanes opened so far (lane k at index k - 1): copies of the task, each running one step at a time. */
  lanes: Laui[];
}

/** The backfills of one task (its `backfill-<task_laui>` stream), and the one not completed yet. */
export interface TaskBackfills {
  backfills: Record<Laui, Backfill>;
  active: Laui | null;
}

export const initialTaskBackfills = (): TaskBackfills => ({ backfills: {}, active: null });

const withStep = (backfill: Backfill, logicalDate: string, change: Partial<BackfillStep>): Backfill => ({
  ...backfill,
  steps: backfill.steps.map((step) => (step.logical_date === logicalDate ? { ...step, ...change } : step)),
});

const update = (state: TaskBackfills, id: Laui, change: (backfill: Backfill) => Backfill): TaskBackfills => {
  const backfill = state.backfills[id];
  return backfill === undefined ? state : { ...state, backfills: { ...state.backfills, [id]: change(backfill) } };
};

export const evolveTaskBackfills = (state: TaskBackfills, event: BackfillEvent): TaskBackfills => {
  switch (event.type) {
    case 'BackfillRequested': {
      const data = event.data;
      const backfill: Backfill = {
        id: data.backfill_id,
        taskLaui: data.task_laui,
        projectLaui: data.project_laui,
        frequency: data.frequency,
        startDate: data.start_date,
        endDate: data.end_date,
        maxActiveRuns: data.max_active_runs,
        taskRevision: data.task_revision,
        requestedBy: data.requested_by,
        requestedAt: data.at,
        cancelled: false,
        completedAt: null,
        steps: data.logical_dates.map((logical_date) => ({ logical_date, state: 'pending', session_id: null, detail: null, started_at: null, ended_at: null, run_task_laui: null })),
        lanes: [],
      };
      return { backfills: { ...state.backfills, [backfill.id]: backfill }, active: backfill.id };
    }
    case 'BackfillRunStarted':
      return update(state, event.data.backfill_id, (backfill) =>
        withStep(backfill, event.data.logical_date, { state: 'running', started_at: event.data.at, run_task_laui: event.data.run_task_laui ?? backfill.taskLaui }),
      );
    case 'BackfillLaneOpened':
      return update(state, event.data.backfill_id, (backfill) => ({ ...backfill, lanes: [...backfill.lanes, event.data.task_laui] }));
    case 'BackfillRunEnded':
      return update(state, event.data.backfill_id, (backfill) =>
        withStep(backfill, event.data.logical_date, { state: event.data.state, session_id: event.data.session_id, detail: event.data.detail, ended_at: event.data.at }),
      );
    case 'BackfillCancelled':
      return update(state, event.data.backfill_id, (backfill) => ({ ...backfill, cancelled: true }));
    case 'BackfillCompleted': {
      const next = update(state, event.data.backfill_id, (backfill) => ({ ...backfill, completedAt: event.data.at }));
      return next.active === event.data.backfill_id ? { ...next, active: null } : next;
    }
  }
};

export const runningSteps = (backfill: Backfill): BackfillStep[] => backfill.steps.filter((step) => step.state === 'running');
export const pendingSteps = (backfill: Backfill): BackfillStep[] => backfill.steps.filter((step) => step.state === 'pending');

/** The tasks that may run the backfill's steps: the task itself first, then its lanes in order. */
export const runnersOf = (backfill: Backfill): Laui[] => [backfill.taskLaui, ...backfill.lanes];

/** The task that runs (ran) a step: its runner, the task itself for events written before lanes. */
export const runnerOf = (backfill: Backfill, step: BackfillStep): Laui => step.run_task_laui ?? backfill.taskLaui;

/** The runners with no step of the backfill in flight. */
export const idleRunners = (backfill: Backfill): Laui[] => {
  const busy = new Set(runningSteps(backfill).map((step) => runnerOf(backfill, step)));
  return runnersOf(backfill).filter((laui) => !busy.has(laui));
};

export const statusOf = (backfill: Backfill): BackfillStatus => (backfill.completedAt !== null ? 'completed' : backfill.cancelled ? 'cancelled' : 'running');

/** What GET /task/backfill/{backfill_id} answers (README: Backfill). */
export interface BackfillProgress {
  backfill_id: Laui;
  task_laui: Laui;
  status: BackfillStatus;
  start_date: string;
  end_date: string;
  max_active_runs: number;
  requested_by: Laui | null;
  requested_at: string;
  completed_at: string | null;
  total: number;
  /** Runs that ended in success. */
  done: number;
  /** Runs that ended otherwise (error, timeout, cancelled, fail, skipped by a pre-action, reset). */
  failed: number;
  running: number;
  /** Steps not started yet (and, once cancelled and completed, never to be). */
  pending: number;
  runs: Array<BackfillStep & { data_interval_start: string; data_interval_end: string }>;
}

export function backfillProgress(backfill: Backfill): BackfillProgress {
  const count = (test: (step: BackfillStep) => boolean) => backfill.steps.filter(test).length;
  const done = count((step) => step.state === 'success');
  const running = count((step) => step.state === 'running');
  const pending = count((step) => step.state === 'pending');
  // A cancelled backfill's steps that never ran read `not_run` once it completed (nothing will start them).
  const stepState = (step: BackfillStep): string => (step.state === 'pending' && backfill.cancelled ? 'not_run' : step.state);
  return {
    backfill_id: backfill.id,
    task_laui: backfill.taskLaui,
    status: statusOf(backfill),
    start_date: backfill.startDate,
    end_date: backfill.endDate,
    max_active_runs: backfill.maxActiveRuns,
    requested_by: backfill.requestedBy,
    requested_at: backfill.requestedAt,
    completed_at: backfill.completedAt,
    total: backfill.steps.length,
    done,
    failed: backfill.steps.length - done - running - pending,
    running,
    pending,
    runs: backfill.steps.map((step) => ({
      ...step,
      state: stepState(step),
      data_interval_start: step.logical_date,
      data_interval_end: stepIntervalEnd(backfill.frequency, step.logical_date),
    })),
  };
}
