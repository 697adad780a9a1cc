import { assertNever } from '../../shared/assertNever.ts';
import type { QueueState, RunningEntry, WaitingEntry } from './queue.ts';
import type { QueueEvent } from '../../shared/domain-events/queueEvents.ts';

export const initialQueueState = (): QueueState => ({ waiting: new Map(), running: new Map(), arrivals: 0 });

/** A queue state being built by one fold, owned by it alone until it is handed out. */
interface Draft {
  waiting: Map<string, WaitingEntry>;
  running: Map<string, RunningEntry>;
  arrivals: number;
}

const apply = (draft: Draft, event: QueueEvent): void => {
  switch (event.type) {
    case 'TaskEnqueued':
      draft.waiting.set(event.data.task_laui, {
        taskLaui: event.data.task_laui,
        priority: event.data.priority,
        sortValues: event.data.sort_values,
        seq: draft.arrivals,
      });
      draft.arrivals += 1;
      return;
    case 'TaskLeased':
      draft.waiting.delete(event.data.task_laui);
      draft.running.set(event.data.task_laui, {
        taskLaui: event.data.task_laui,
        dispatchId: event.data.dispatch_id,
        sessionId: event.data.session_id,
        leasedAt: event.data.at,
      });
      return;
    case 'TaskSlotReleased':
      draft.running.delete(event.data.task_laui);
      return;
    case 'TaskDequeued':
      draft.waiting.delete(event.data.task_laui);
      return;
    default:
      assertNever(event);
  }
};

/**
 * States are never changed in place (folded states are cached and shared), so each event copies
 * the maps it changes; the other map is shared with the previous state.
 */
export const evolveQueue = (state: QueueState, event: QueueEvent): QueueState => {
  const changesWaiting = event.type !== 'TaskSlotReleased';
  const changesRunning = event.type === 'TaskLeased' || event.type === 'TaskSlotReleased';
  const draft: Draft = {
    waiting: changesWaiting ? new Map(state.waiting) : (state.waiting as Map<string, WaitingEntry>),
    running: changesRunning ? new Map(state.running) : (state.running as Map<string, RunningEntry>),
    arrivals: state.arrivals,
  };
  apply(draft, event);
  return draft;
};

/**
 * A private copy of a state that events are applied to in place: one copy for a whole batch, where a
 * thousand enqueues folded one event at a time would copy a queue of up to a thousand entries a
 * thousand times. `state` is handed out only once the batch is folded.
 */
export const queueDraft = (state: QueueState): { state: QueueState; apply(event: QueueEvent): void } => {
  const draft: Draft = { waiting: new Map(state.waiting), running: new Map(state.running), arrivals: state.arrivals };
  return { state: draft, apply: (event) => apply(draft, event) };
};
