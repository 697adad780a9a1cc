import { assertNever } from '../../shared/assertNever.ts';
import { notFound } from '../../shared/errors.ts';
import type { Decider } from '../kernel/Decider.ts';
import { evolveQueue, initialQueueState, queueDraft } from './evolve.ts';
import { NOT_IN_QUEUE, type QueueCommand, type QueueEvent, type QueueState, type SortDict, type WaitingEntry } from './queue.ts';

const compareValues = (left: unknown, right: unknown): number => {
  if (left === right) return 0;
  if (left === undefined || left === null) return 1;
  if (right === undefined || right === null) return -1;
  if (typeof left === 'number' && typeof right === 'number') return left - right;
  return String(left) < String(right) ? -1 : 1;
};

/**
 * Queue order: the connection's sort_dict fields in their order (ascending/asc/1 or
 * descending/desc/-1), then higher priority first, then arrival order.
 */
export const queueOrder = (sortDict: SortDict) => {
  const keys = Object.entries(sortDict).map(([field, direction]) => ({ field, sign: /^(desc|descending|-1)$/i.test(String(direction)) ? -1 : 1 }));
  return (a: WaitingEntry, b: WaitingEntry): number => {
    for (const { field, sign } of keys) {
      const byField = compareValues(a.sortValues[field], b.sortValues[field]);
      if (byField !== 0) return sign * byField;
    }
    return b.priority - a.priority || a.seq - b.seq;
  };
};

export const decideQueue = (command: QueueCommand, state: QueueState): QueueEvent[] => {
  switch (command.kind) {
    case 'enqueue':
      // Rule 8: tasks already in the queue (waiting or running) are dropped.
      if (state.waiting.has(command.taskLaui) || state.running.has(command.taskLaui)) return [];
      return [{ type: 'TaskEnqueued', data: { task_laui: command.taskLaui, priority: command.priority, sort_values: command.sortValues, at: command.at } }];
    case 'dispatch': {
      const available = Math.min(command.maxParallelism - state.running.size, command.leases.length);
      if (available <= 0 || state.waiting.size === 0) return [];
      const chosen = [...state.waiting.values()].sort(queueOrder(command.sortDict)).slice(0, available);
      return chosen.map((entry, index) => {
        const lease = command.leases.at(index) as { dispatchId: string; sessionId: string };
        return { type: 'TaskLeased', data: { task_laui: entry.taskLaui, dispatch_id: lease.dispatchId, session_id: lease.sessionId, at: command.at } };
      });
    }
    case 'release': {
      const running = state.running.get(command.taskLaui);
      if (running) {
        if (command.dispatchId !== null && command.dispatchId !== running.dispatchId) return [];
        return [{ type: 'TaskSlotReleased', data: { task_laui: command.taskLaui, dispatch_id: running.dispatchId, reason: command.reason, at: command.at } }];
      }
      if (state.waiting.has(command.taskLaui)) return [{ type: 'TaskDequeued', data: { task_laui: command.taskLaui, reason: command.reason, at: command.at } }];
      throw notFound(NOT_IN_QUEUE);
    }
    case 'release_finished': {
      const running = state.running.get(command.taskLaui);
      if (!running || running.sessionId !== command.sessionId) return [];
      return [{ type: 'TaskSlotReleased', data: { task_laui: command.taskLaui, dispatch_id: running.dispatchId, reason: 'finished', at: command.at } }];
    }
    case 'remove': {
      const running = state.running.get(command.taskLaui);
      if (running) return [{ type: 'TaskSlotReleased', data: { task_laui: command.taskLaui, dispatch_id: running.dispatchId, reason: 'reset', at: command.at } }];
      if (state.waiting.has(command.taskLaui)) return [{ type: 'TaskDequeued', data: { task_laui: command.taskLaui, reason: 'reset', at: command.at } }];
      return [];
    }
    default:
      return assertNever(command);
  }
};

export const queueDecider: Decider<QueueState, QueueCommand, QueueEvent> = {
  initialState: initialQueueState,
  evolve: evolveQueue,
  decide: decideQueue,
};

/** What one group of commands of a merged queue decision came to: its events, or its own error. */
export type GroupVerdict = { events: QueueEvent[] } | { events: []; error: unknown };

/**
 * Groups of commands (each the commands of one caller) decided in order on one private copy of the
 * queue, as if each group had been decided and committed after the one before. A group that throws
 * before deciding anything (a release of a task not in the queue) fails alone; one that throws later
 * fails the whole decision, since its events so far are already applied to the copy.
 */
export const decideQueueGroups = (groups: ReadonlyArray<ReadonlyArray<QueueCommand>>, state: QueueState): GroupVerdict[] => {
  const draft = queueDraft(state);
  return groups.map((group): GroupVerdict => {
    const events: QueueEvent[] = [];
    try {
      for (const command of group) {
        for (const event of decideQueue(command, draft.state)) {
          events.push(event);
          draft.apply(event);
        }
      }
    } catch (error) {
      if (events.length > 0) throw error;
      return { events: [], error };
    }
    return { events };
  });
};

