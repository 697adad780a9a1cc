import type { DomainEvent } from '../../events.ts';
import type { Laui } from '../../ids.ts';

/**
 * Events of a task's backfills (issue 36), in the task's `backfill-<task_laui>` stream: one stream
 * per task, so that "one backfill at a time per task" is decided on one stream revision (two
 * requests at once: one wins, the other is decided again and refused). Every event names its
 * backfill. All at schema version 1.
 */
export type BackfillEvent =
  | DomainEvent<
      'BackfillRequested',
      {
        backfill_id: Laui;
        task_laui: Laui;
        project_laui: Laui | null;
        frequency: string;
        start_date: string;
        end_date: string;
        max_active_runs: number;
        /** The cron steps to run, oldest first: each run's logical_date. */
        logical_dates: string[];
        /** The task stream's revision when requested: its runs' events are looked for after it. */
        task_revision: number;
        requested_by: Laui | null;
        at: string;
      }
    >
  /**
   * The driver is starting the run of this step (the runner's events of the run follow, naming the
   * backfill). `run_task_laui`: the lane that runs it when not the task itself (absent on events
   * written before lanes: the task).
   */
  | DomainEvent<'BackfillRunStarted', { backfill_id: Laui; logical_date: string; run_task_laui?: Laui; at: string }>
  /**
   * A lane for max_active_runs above 1: a task holds one run at a time, so the backfill's k-th run in
   * flight runs on a copy of the task (`task_laui`, marked `backfill_lane_of`), created after this
   * event and soft-deleted once the backfill completes.
   */
  | DomainEvent<'BackfillLaneOpened', { backfill_id: Laui; lane: number; task_laui: Laui; at: string }>
  /** The run of this step ended: the task state it ended in, or `skipped` (a pre-action) or `fail` (refused before the queue, `detail`). */
  | DomainEvent<'BackfillRunEnded', { backfill_id: Laui; logical_date: string; state: string; session_id: string | null; detail: string | null; at: string }>
  /** No new run starts; a run in flight ends normally. */
  | DomainEvent<'BackfillCancelled', { backfill_id: Laui; by: Laui | null; reason: string | null; at: string }>
  /** Every step ran (or, cancelled, no run is in flight any more): the task may be backfilled again. */
  | DomainEvent<'BackfillCompleted', { backfill_id: Laui; succeeded: number; failed: number; not_run: number; at: string }>;

export type BackfillEventType = BackfillEvent['type'];

export const BACKFILL_EVENT_TYPES: readonly BackfillEventType[] = ['BackfillRequested', 'BackfillRunStarted', 'BackfillLaneOpened', 'BackfillRunEnded', 'BackfillCancelled', 'BackfillCompleted'];

export const backfillStream = (taskLaui: Laui): string => `backfill-${taskLaui}`;

/**
 * The registry of every backfill (`backfills` stream): how a backfill id finds its task, and how the
 * scheduler's driver finds the backfills to resume after a restart. Written before the request.
 */
export type BackfillRegistryEvent = DomainEvent<'BackfillRegistered', { backfill_id: Laui; task_laui: Laui; at: string }>;

export const BACKFILL_REGISTRY_STREAM = 'backfills';
