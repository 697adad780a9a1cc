import { QUEUED_STATE } from '../../shared/task/transitions.ts';
import { decideRun, onlyChangesOf } from '../../shared/task/runLifecycle.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { EventStore, Position } from '../../shared/event-store/EventStore.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import { schedulerDue, type SchedulerPath } from '../../shared/task/readyToRun.ts';
import type { TaskRecord } from '../../shared/task/taskFields.ts';
import type { Decider } from '../kernel/Decider.ts';
import { handleCommand } from '../kernel/handleCommand.ts';
import { itemStatesOf } from '../catalog/itemStates.ts';
import { itemDecider } from '../catalog/decide.ts';
import { itemStream, SERVICE_ACTOR, type ItemState } from '../catalog/item.ts';
import type { ItemEvent } from '../../shared/domain-events/itemEvents.ts';

/**
 * The guard that keeps a task from being dispatched twice for one logical date when two scheduler
 * loops race (two processes, or a loop taking over one it wrongly thought dead).
 *
 * The read model a loop selects from may lag, so the claim re-decides on the task stream itself:
 * the task must still be due (schedulerDue on the folded fields, not the read model's copy), and the
 * claim — the spec's "cron pick-up" transition to queued_for_connection — is appended at the stream
 * revision that decision read. Of two loops that read the same revision one append wins; the other
 * is decided again on the winner's queued_for_connection, which is not due, and claims nothing. A loop
 * reading after the run has finished sees the advanced logical_date and next_run_date, so a stale
 * selection cannot re-run the same logical date either. The claim is part of the task's history.
 */

interface ClaimCommand {
  now: Date;
  workflowState: string | null;
  revisionLaui: Laui;
  at: string;
}

export const claimDecider: Decider<ItemState, ClaimCommand, ItemEvent> = {
  initialState: itemDecider.initialState,
  evolve: itemDecider.evolve,
  decide: (command, state) => {
    if (state.status !== 'live' || state.itemType !== 'task') return [];
    const decision = schedulerDue({ ...state.fields, item_type: 'task' } as TaskRecord, command.now, command.workflowState);
    if (!decision.ready) return [];
    return itemDecider.decide(
      {
        kind: 'update',
        actor: SERVICE_ACTOR,
        laui: state.laui,
        changes: onlyChangesOf(decideRun(state.fields as TaskRecord, { trigger: 'Claimed', at: new Date(command.at) })),
        versionedFields: [],
        expectedVersion: null,
        access: null,
        revisionLaui: command.revisionLaui,
      },
      state,
    );
  },
};

export interface Claim {
  path: SchedulerPath;
  /** The task's fields as they were when claimed (state before the claim). */
  fields: Record<string, unknown>;
  position: Position | null;
}

/** The claim, or null when the task is no longer due (another loop claimed it, or it changed). */
export const claimDueTask = async (
  eventStore: EventStore,
  taskLaui: Laui,
  now: Date,
  workflowState: string | null,
  metadata: EventMetadata,
): Promise<Claim | null> => {
  // What the winning decision saw: the decider may run again on fresh state after a conflict.
  const seen: { path: SchedulerPath | null; fields: Record<string, unknown> } = { path: null, fields: {} };
  const observing: Decider<ItemState, ClaimCommand, ItemEvent> = {
    ...claimDecider,
    decide: (command, state) => {
      const events = claimDecider.decide(command, state);
      seen.path = null;
      if (events.length > 0 && state.status !== 'none') {
        const decision = schedulerDue({ ...state.fields, item_type: 'task' } as TaskRecord, command.now, command.workflowState);
        seen.path = decision.ready ? decision.path : null;
        seen.fields = { ...state.fields, name: state.name };
      }
      return events;
    },
  };
  const result = await handleCommand({
    eventStore,
    streamId: itemStream(taskLaui),
    decider: observing,
    command: { now, workflowState, revisionLaui: newLaui(now), at: metadata.at },
    metadata,
    // A daily task's stream grows for ever: claims share changeTask's folded states (same events).
    cache: itemStatesOf(eventStore),
  });
  if (result.events.length === 0 || seen.path === null) return null;
  return { path: seen.path, fields: seen.fields, position: result.position };
};

/** Undo a claim whose dispatch failed (validation raced, queue refused): back to the claimed-from state. */
export const releaseDecider: Decider<ItemState, { previousState: string; revisionLaui: Laui }, ItemEvent> = {
  initialState: itemDecider.initialState,
  evolve: itemDecider.evolve,
  decide: (command, state) => {
    if (state.status !== 'live' || state.fields.state !== QUEUED_STATE) return [];
    return itemDecider.decide(
      {
        kind: 'update',
        actor: SERVICE_ACTOR,
        laui: state.laui,
        changes: onlyChangesOf(decideRun(state.fields as TaskRecord, { trigger: 'ClaimReleased', to: command.previousState })),
        versionedFields: [],
        expectedVersion: null,
        access: null,
        revisionLaui: command.revisionLaui,
        trigger: 'claim_released',
      },
      state,
    );
  },
};

export const releaseClaim = async (eventStore: EventStore, taskLaui: Laui, previousState: string, metadata: EventMetadata): Promise<void> => {
  await handleCommand({ eventStore, streamId: itemStream(taskLaui), decider: releaseDecider, command: { previousState, revisionLaui: newLaui(new Date(metadata.at)) }, metadata });
};
