import { assertNever } from '../../shared/assertNever.ts';
import { notFound } from '../../shared/errors.ts';
import { firstInOrder } from '../../shared/firstInOrder.ts';
import type { Decider } from '../kernel/Decider.ts';
import { evolveQueue, initialQueueState, queueDraft } from './evolve.ts';
import { NOT_IN_QUEUE, type QueueCommand, type QueueState, type SortDict, type WaitingEntry } from './queue.ts';
import type { QueueEvent } from '../../shared/domain-events/queueEvents.ts';

/**
 * A sort value as text. Sort fields are any task field (a payload too), so a value may be an object
 * whose `toString` is no function (`{"toString": "x"}`): String() of it throws, which broke every
 * dispatch of the connection. Objects compare by their JSON (task documents are depth-clamped).
 */
const sortText = (value: unknown): string => (typeof value === 'object' && value !== null ? (JSON.stringify(value) ?? '') : String(value));

const compareValues = (left: unknown, right: unknown): number => {
  if (left === right || ((left === undefined || left === null) && (right === undefined || right === null))) return 0;
  if (left === undefined || left === null) return 1;
  if (right === undefined || right === null) return -1;
  if (typeof left === 'number' && typeof right === 'number') return left - right;
  // Equal texts (1 and "1", two objects with the same JSON) compare equal, as absent and null do
  // (above): the order stays a total order (arrival decides), which picking the first few without
  // a full sort relies on.
  const [leftText, rightText] = [sortText(left), sortText(right)];
  return leftText === rightText ? 0 : leftText < rightText ? -1 : 1;
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
      // The first `available` in queue order, without sorting the whole queue: a run's end leases
      // one slot, and with a thousand runs waiting, a full sort at every end was n log n each time.
      const chosen = firstInOrder(state.waiting.values(), available, queueOrder(command.sortDict));
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
      return [{ type: 'TaskSlotReleased', data: { task_laui: command.taskLaui, dispatch_id: running.dispatchId, reason: command.reason ?? 'finished', at: command.at } }];
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

/**
 * What a decision writes, from what it decided: a task enqueued and then leased in the same decision
 * is one TaskLeased carrying its arrival (`enqueued`) at the lease's place, not a TaskEnqueued and a
 * TaskLeased (a seventh of a run's events; the lease is what the task's run is planned from, and a
 * task that arrives to a free slot never waits). Folding the written events gives the same waiting
 * and running entries as folding the decided ones: the task was never waiting at any event of
 * another task, and later arrivals keep their relative order (only their sequence numbers, which
 * are just for ordering, differ by the arrivals merged). `from[i]` is the decided index of written
 * event i (its metadata).
 */
export const writtenEvents = (decided: ReadonlyArray<QueueEvent>): { events: QueueEvent[]; from: number[] } => {
  // A task's TaskEnqueued still open (no other event of it since), and each lease's merged arrival.
  const arrivals = new Map<string, number>();
  const leaseArrival = new Map<number, number>();
  decided.forEach((event, index) => {
    const laui = event.data.task_laui;
    const arrival = arrivals.get(laui);
    arrivals.delete(laui);
    if (event.type === 'TaskEnqueued') arrivals.set(laui, index);
    else if (event.type === 'TaskLeased' && arrival !== undefined) leaseArrival.set(index, arrival);
  });
  if (leaseArrival.size === 0) return { events: [...decided], from: decided.map((_, index) => index) };
  const merged = new Set(leaseArrival.values());
  const events: QueueEvent[] = [];
  const from: number[] = [];
  decided.forEach((event, index) => {
    if (merged.has(index)) return;
    const arrival = leaseArrival.get(index);
    const enqueued = arrival === undefined ? undefined : (decided[arrival] as Extract<QueueEvent, { type: 'TaskEnqueued' }>).data;
    events.push(
      enqueued && event.type === 'TaskLeased'
        ? { ...event, data: { ...event.data, enqueued: { priority: enqueued.priority, sort_values: enqueued.sort_values, at: enqueued.at } } }
        : event,
    );
    from.push(index);
  });
  return { events, from };
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

