import { expect } from 'chai';
import { deciderSpecification } from '../../test/support/deciderSpecification.ts';
import type { Decider } from '../kernel/Decider.ts';
import { inSequence } from '../kernel/handleCommand.ts';
import { decideQueueGroups, queueDecider, queueOrder, writtenEvents } from './decide.ts';
import { evolveQueue, initialQueueState, queueDraft } from './evolve.ts';
import { NOT_IN_QUEUE, type QueueCommand, type QueueState } from './queue.ts';
import type { QueueEvent } from '../../shared/domain-events/queueEvents.ts';

/** One caller's commands decided as the queue handler decides a caller's group (one queue commit). */
const queueSequenceDecider: Decider<QueueState, ReadonlyArray<QueueCommand>, QueueEvent> = {
  ...queueDecider,
  decide: (commands, state) => {
    const [verdict] = decideQueueGroups([commands], state);
    if (verdict && 'error' in verdict) throw verdict.error;
    return verdict?.events ?? [];
  },
};

const given = deciderSpecification(queueDecider);
const givenBatch = deciderSpecification(queueSequenceDecider);
const at = '2026-01-01T00:00:00.000Z';
const t = (n: number) => `65a0000000000000000000${String(n).padStart(2, '0')}`;
const enqueued = (n: number, priority = 1, sort_values: Record<string, unknown> = {}): QueueEvent => ({
  type: 'TaskEnqueued',
  data: { task_laui: t(n), priority, sort_values, at },
});
const leased = (n: number, dispatch = `d${n}`): QueueEvent => ({ type: 'TaskLeased', data: { task_laui: t(n), dispatch_id: dispatch, session_id: `s${n}`, at } });
const leases = (count: number) => Array.from({ length: count }, (_, index) => ({ dispatchId: `x${index}`, sessionId: `y${index}` }));

const enqueue = (n: number, sortValues: Record<string, unknown> = {}): QueueCommand => ({ kind: 'enqueue', taskLaui: t(n), priority: 1, sortValues, at });
const dispatch = (maxParallelism: number): QueueCommand => ({ kind: 'dispatch', maxParallelism, sortDict: { logical_date: 'ascending' }, leases: leases(maxParallelism), at });

describe('connection queue decider', () => {
  it('given a task already waiting or running, when enqueued again, then nothing is recorded', () => {
    given(enqueued(1)).when({ kind: 'enqueue', taskLaui: t(1), priority: 1, sortValues: {}, at }).then([]);
    given(enqueued(1), leased(1)).when({ kind: 'enqueue', taskLaui: t(1), priority: 1, sortValues: {}, at }).then([]);
  });

  it('given 2 running of max 3 and 3 waiting, when dispatching, then exactly one slot is leased, to the highest priority', () => {
    given(enqueued(1), enqueued(2), leased(1), leased(2), enqueued(3, 1), enqueued(4, 5), enqueued(5, 1))
      .when({ kind: 'dispatch', maxParallelism: 3, sortDict: {}, leases: leases(3), at })
      .then([{ type: 'TaskLeased', data: { task_laui: t(4), dispatch_id: 'x0', session_id: 'y0', at } }]);
  });

  it('given a full queue, when dispatching, then nothing is leased', () => {
    given(enqueued(1), leased(1), enqueued(2)).when({ kind: 'dispatch', maxParallelism: 1, sortDict: {}, leases: leases(1), at }).then([]);
  });

  it('given a sort_dict, when dispatching, then its fields order the queue before priority and arrival', () => {
    given(enqueued(1, 9, { size: 3 }), enqueued(2, 1, { size: 1 }), enqueued(3, 1, { size: 2 }))
      .when({ kind: 'dispatch', maxParallelism: 2, sortDict: { size: 'ascending' }, leases: leases(2), at })
      .then([
        { type: 'TaskLeased', data: { task_laui: t(2), dispatch_id: 'x0', session_id: 'y0', at } },
        { type: 'TaskLeased', data: { task_laui: t(3), dispatch_id: 'x1', session_id: 'y1', at } },
      ]);
    given(enqueued(1, 1, { size: 3 }), enqueued(2, 1, { size: 1 }))
      .when({ kind: 'dispatch', maxParallelism: 1, sortDict: { size: 'descending' }, leases: leases(1), at })
      .then([{ type: 'TaskLeased', data: { task_laui: t(1), dispatch_id: 'x0', session_id: 'y0', at } }]);
  });

  it('given 90 waiting with tied sort values and priorities, when dispatching 1, 3, 40 or 90 slots, then the leased are the first of the whole queue sorted', () => {
    // Ties of every kind: equal numbers, 1 against "1", objects with the same JSON, absent values.
    const values = [1, '1', 2, { a: 1 }, { a: 1 }, null, 'b', 2];
    const history = Array.from({ length: 90 }, (_, index) => enqueued(index + 1, index % 3, index % 7 === 0 ? {} : { rank: values[index % values.length] }));
    const state = history.reduce(evolveQueue, initialQueueState());
    const sortDict = { rank: 'ascending' };
    const sorted = [...state.waiting.values()].sort(queueOrder(sortDict)).map((entry) => entry.taskLaui);
    for (const slots of [1, 3, 40, 90]) {
      const events = queueDecider.decide({ kind: 'dispatch', maxParallelism: slots, sortDict, leases: leases(slots), at }, state);
      expect(events.map((event) => (event.data as { task_laui: string }).task_laui)).to.deep.equal(sorted.slice(0, slots));
    }
  });

  it('given sort values of any JSON type (an object whose toString is no function), when dispatching, then the queue is still ordered', () => {
    const hostile = JSON.parse('{"toString":"x"}') as unknown;
    given(enqueued(1, 1, { payload: hostile }), enqueued(2, 1, { payload: 'a' }), enqueued(3, 1, { payload: ['b'] }))
      .when({ kind: 'dispatch', maxParallelism: 1, sortDict: { payload: 'ascending' }, leases: leases(1), at })
      .then([{ type: 'TaskLeased', data: { task_laui: t(3), dispatch_id: 'x0', session_id: 'y0', at } }]);
  });

  it('given a running lease, when released by its holder, by anyone, or by a stale holder, then only a current release frees the slot', () => {
    const release = { type: 'TaskSlotReleased', data: { task_laui: t(1), dispatch_id: 'd1', reason: 'finished', at } } as QueueEvent;
    given(enqueued(1), leased(1)).when({ kind: 'release', taskLaui: t(1), dispatchId: 'd1', reason: 'finished', at }).then([release]);
    given(enqueued(1), leased(1)).when({ kind: 'release', taskLaui: t(1), dispatchId: null, reason: 'finished', at }).then([release]);
    given(enqueued(1), leased(1)).when({ kind: 'release', taskLaui: t(1), dispatchId: 'old', reason: 'finished', at }).then([]);
  });

  it('given a task not in the queue, when finished, then 404', () => {
    given(enqueued(1), leased(1), { type: 'TaskSlotReleased', data: { task_laui: t(1), dispatch_id: 'd1', reason: 'finished', at } })
      .when({ kind: 'release', taskLaui: t(1), dispatchId: null, reason: 'finished', at })
      .thenFails(404, NOT_IN_QUEUE);
  });

  it('given a waiting or running task, when removed by a reset, then it leaves the queue; absent, nothing happens', () => {
    given(enqueued(1)).when({ kind: 'remove', taskLaui: t(1), at }).then([{ type: 'TaskDequeued', data: { task_laui: t(1), reason: 'reset', at } }]);
    given(enqueued(1), leased(1))
      .when({ kind: 'remove', taskLaui: t(1), at })
      .then([{ type: 'TaskSlotReleased', data: { task_laui: t(1), dispatch_id: 'd1', reason: 'reset', at } }]);
    given().when({ kind: 'remove', taskLaui: t(1), at }).then([]);
  });

  it('given a lease held by a finished run, when release_finished names its session, then the slot is freed; another session or no lease, nothing (never a 404)', () => {
    const release = { type: 'TaskSlotReleased', data: { task_laui: t(1), dispatch_id: 'd1', reason: 'finished', at } } as QueueEvent;
    given(enqueued(1), leased(1)).when({ kind: 'release_finished', taskLaui: t(1), sessionId: 's1', at }).then([release]);
    given(enqueued(1), leased(1)).when({ kind: 'release_finished', taskLaui: t(1), sessionId: 'other', at }).then([]);
    given(enqueued(1)).when({ kind: 'release_finished', taskLaui: t(1), sessionId: 's1', at }).then([]);
    given().when({ kind: 'release_finished', taskLaui: t(1), sessionId: 's1', at }).then([]);
  });

  it('given an empty queue, when a task is enqueued, then TaskEnqueued carries its priority, sort values and time', () => {
    given().when({ kind: 'enqueue', taskLaui: t(1), priority: 3, sortValues: { logical_date: 'x' }, at }).then([enqueued(1, 3, { logical_date: 'x' })]);
  });

  it('given waiting tasks, when dispatching with fewer lease ids than free slots, then only as many are leased; nothing waiting, nothing leased', () => {
    given(enqueued(1), enqueued(2), enqueued(3))
      .when({ kind: 'dispatch', maxParallelism: 5, sortDict: {}, leases: leases(2), at })
      .then([
        { type: 'TaskLeased', data: { task_laui: t(1), dispatch_id: 'x0', session_id: 'y0', at } },
        { type: 'TaskLeased', data: { task_laui: t(2), dispatch_id: 'x1', session_id: 'y1', at } },
      ]);
    given(enqueued(1), leased(1)).when({ kind: 'dispatch', maxParallelism: 5, sortDict: {}, leases: leases(5), at }).then([]);
  });

  it('given a waiting task, when released (its run refused before its lease), then TaskDequeued with the command\'s reason', () => {
    given(enqueued(1)).when({ kind: 'release', taskLaui: t(1), dispatchId: 'any', reason: 'finished', at }).then([{ type: 'TaskDequeued', data: { task_laui: t(1), reason: 'finished', at } }]);
  });

  it('given a lease held by a run the reaper ended, when release_finished says stale, then the slot is freed as stale', () => {
    given(enqueued(1), leased(1))
      .when({ kind: 'release_finished', taskLaui: t(1), sessionId: 's1', reason: 'stale', at })
      .then([{ type: 'TaskSlotReleased', data: { task_laui: t(1), dispatch_id: 'd1', reason: 'stale', at } }]);
  });

  it('given queue events, when folded, then waiting and running follow them and no earlier state is changed in place (states are cached and shared)', () => {
    const waiting = [enqueued(1), enqueued(2, 4)].reduce(evolveQueue, initialQueueState());
    const leasedState = evolveQueue(waiting, leased(2));
    expect([...waiting.waiting.keys()]).to.deep.equal([t(1), t(2)]);
    expect(waiting.running.size).to.equal(0);
    expect([...leasedState.waiting.keys()]).to.deep.equal([t(1)]);
    expect(leasedState.running.get(t(2))).to.deep.equal({ taskLaui: t(2), dispatchId: 'd2', sessionId: 's2', leasedAt: at });
    const released = evolveQueue(leasedState, { type: 'TaskSlotReleased', data: { task_laui: t(2), dispatch_id: 'd2', reason: 'finished', at } });
    const dequeued = evolveQueue(released, { type: 'TaskDequeued', data: { task_laui: t(1), reason: 'reset', at } });
    expect(leasedState.running.size).to.equal(1);
    expect(released.running.size).to.equal(0);
    expect([...released.waiting.keys()]).to.deep.equal([t(1)]);
    expect(dequeued.waiting.size).to.equal(0);
    expect(dequeued.arrivals).to.equal(2);
  });

  describe('a batch of commands (one queue commit)', () => {
    const day = (d: number) => ({ logical_date: `2024-06-0${d}T00:00:00.000Z` });

    it('given 2 of 3 slots taken, one by a finished run still holding its lease, when a batch frees it, enqueues 4 tasks (one already waiting) and dispatches, then 3 join and the 2 free slots go to the oldest logical dates', () => {
      givenBatch(enqueued(1), leased(1), enqueued(2, 1, day(9)), enqueued(9), leased(9))
        .when([{ kind: 'release_finished', taskLaui: t(1), sessionId: 's1', at }, enqueue(3, day(5)), enqueue(2, day(9)), enqueue(4, day(3)), enqueue(5, day(4)), dispatch(3)])
        .then([
          { type: 'TaskSlotReleased', data: { task_laui: t(1), dispatch_id: 'd1', reason: 'finished', at } },
          { type: 'TaskEnqueued', data: { task_laui: t(3), priority: 1, sort_values: day(5), at } },
          { type: 'TaskEnqueued', data: { task_laui: t(4), priority: 1, sort_values: day(3), at } },
          { type: 'TaskEnqueued', data: { task_laui: t(5), priority: 1, sort_values: day(4), at } },
          { type: 'TaskLeased', data: { task_laui: t(4), dispatch_id: 'x0', session_id: 'y0', at } },
          { type: 'TaskLeased', data: { task_laui: t(5), dispatch_id: 'x1', session_id: 'y1', at } },
        ]);
    });

    it('given any history and batch, when decided on one draft, then the events and the folded state are those of deciding command by command', () => {
      const history = [enqueued(1), leased(1), enqueued(2, 3), enqueued(3, 1, day(2)), leased(3)];
      const batch = [enqueue(4, day(1)), enqueue(2), { kind: 'release', taskLaui: t(3), dispatchId: null, reason: 'finished', at } as QueueCommand, enqueue(5, day(7)), dispatch(4)];
      const state = history.reduce(evolveQueue, initialQueueState());
      const events = queueSequenceDecider.decide(batch, state);
      expect(events).to.deep.equal(inSequence(queueDecider).decide(batch, state));
      const draft = queueDraft(state);
      for (const event of events) draft.apply(event);
      expect(draft.state).to.deep.equal(events.reduce(evolveQueue, state));
      // The folded history was not touched by the draft.
      expect([...state.waiting.keys()]).to.deep.equal([t(2)]);
    });
  });

  describe('groups of several callers in one decision', () => {
    it('given groups, when decided together, then each gets the events it would have got decided after the ones before', () => {
      const state = [enqueued(1), leased(1)].reduce(evolveQueue, initialQueueState());
      const first = [enqueue(2), dispatch(2)];
      const second = [{ kind: 'release_finished', taskLaui: t(1), sessionId: 's1', at } as QueueCommand, enqueue(3), dispatch(2)];
      const verdicts = decideQueueGroups([first, second], state);
      const alone = queueSequenceDecider.decide(first, state);
      expect(verdicts[0]).to.deep.equal({ events: alone });
      expect(verdicts[1]).to.deep.equal({ events: queueSequenceDecider.decide(second, alone.reduce(evolveQueue, state)) });
    });

    it('given a release of a task not in the queue among other groups, when decided, then it fails alone and the others still decide', () => {
      const state = initialQueueState();
      const verdicts = decideQueueGroups([[enqueue(1)], [{ kind: 'release', taskLaui: t(9), dispatchId: null, reason: 'finished', at }], [enqueue(2)]], state);
      expect(verdicts[0]?.events).to.have.length(1);
      expect(String((verdicts[1] as { error?: unknown }).error)).to.include(NOT_IN_QUEUE);
      expect(verdicts[2]?.events.map((event) => event.data.task_laui)).to.deep.equal([t(2)]);
    });
  });

  describe('what a decision writes', () => {
    const day = (d: number) => ({ logical_date: `2024-06-0${d}T00:00:00.000Z` });
    const folded = (state: QueueState) => ({ waiting: [...state.waiting.values()].map((entry) => ({ ...entry, seq: 0 })), running: [...state.running.values()] });

    it('given a batch where some tasks arrive to free slots and others wait, when written, then each leased arrival is one TaskLeased carrying it and the fold is that of the decided events', () => {
      const state = [enqueued(1), leased(1), enqueued(2, 1, day(9))].reduce(evolveQueue, initialQueueState());
      const decided = queueSequenceDecider.decide([enqueue(3, day(5)), enqueue(4, day(3)), enqueue(5, day(8)), enqueue(6, day(7)), dispatch(3)], state);

      const written = writtenEvents(decided);

      expect(written.events).to.deep.equal([
        { type: 'TaskEnqueued', data: { task_laui: t(5), priority: 1, sort_values: day(8), at } },
        { type: 'TaskEnqueued', data: { task_laui: t(6), priority: 1, sort_values: day(7), at } },
        { type: 'TaskLeased', data: { task_laui: t(4), dispatch_id: 'x0', session_id: 'y0', at, enqueued: { priority: 1, sort_values: day(3), at } } },
        { type: 'TaskLeased', data: { task_laui: t(3), dispatch_id: 'x1', session_id: 'y1', at, enqueued: { priority: 1, sort_values: day(5), at } } },
      ]);
      expect(written.from).to.deep.equal([2, 3, 4, 5]);
      const fromWritten = written.events.reduce(evolveQueue, state);
      expect(folded(fromWritten)).to.deep.equal(folded(decided.reduce(evolveQueue, state)));
      // The waiting tasks keep their order: the next dispatch leases the same task either way.
      const next = [{ kind: 'release', taskLaui: t(1), dispatchId: null, reason: 'finished', at } as QueueCommand, dispatch(3)];
      expect(queueSequenceDecider.decide(next, fromWritten)).to.deep.equal(queueSequenceDecider.decide(next, decided.reduce(evolveQueue, state)));
    });

    it('given a task enqueued, dequeued and enqueued again before its lease, when written, then only its last arrival is merged into the lease', () => {
      const decided: QueueEvent[] = [enqueued(1), { type: 'TaskDequeued', data: { task_laui: t(1), reason: 'reset', at } }, enqueued(1, 7), leased(1)];

      const written = writtenEvents(decided);

      expect(written.events.map((event) => event.type)).to.deep.equal(['TaskEnqueued', 'TaskDequeued', 'TaskLeased']);
      expect(written.events[2]?.data).to.deep.include({ enqueued: { priority: 7, sort_values: {}, at } });
      expect(written.from).to.deep.equal([0, 1, 3]);
    });

    it('given a lease of a task that arrived in an earlier decision, when written, then the events are written as decided', () => {
      const decided = [leased(1), enqueued(2)];

      expect(writtenEvents(decided)).to.deep.equal({ events: decided, from: [0, 1] });
    });
  });
});
