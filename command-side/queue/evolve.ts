import { assertNever } from '../../shared/assertNever.ts';
import type { QueueEvent, QueueState } from './queue.ts';

export const initialQueueState = (): QueueState => ({ waiting: new Map(), running: new Map(), arrivals: 0 });

export const evolveQueue = (state: QueueState, event: QueueEvent): QueueState => {
  const waiting = new Map(state.waiting);
  const running = new Map(state.running);
  switch (event.type) {
    case 'TaskEnqueued':
      waiting.set(event.data.task_laui, {
        taskLaui: event.data.task_laui,
        priority: event.data.priority,
        sortValues: event.data.sort_values,
        seq: state.arrivals,
      });
      return { waiting, running, arrivals: state.arrivals + 1 };
    case 'TaskLeased':
      waiting.delete(event.data.task_laui);
      running.set(event.data.task_laui, {
        taskLaui: event.data.task_laui,
        dispatchId: event.data.dispatch_id,
        sessionId: event.data.session_id,
        leasedAt: event.data.at,
      });
      return { ...state, waiting, running };
    case 'TaskSlotReleased':
      running.delete(event.data.task_laui);
      return { ...state, waiting, running };
    case 'TaskDequeued':
      waiting.delete(event.data.task_laui);
      return { ...state, waiting, running };
    default:
      return assertNever(event);
  }
};
