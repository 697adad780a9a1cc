import { expect } from 'chai';
import { deciderSpecification } from '../../test/support/deciderSpecification.ts';
import { TASK_STATES } from '../../shared/item-types/schemas/task.ts';
import { allowedTransition, refusedTransitionDetail, TRANSITIONS, type TaskTrigger } from '../../shared/task/transitions.ts';
import type { TaskEventType } from '../../shared/task/taskEvents.ts';
import type { ItemEvent } from '../../shared/domain-events/itemEvents.ts';
import { taskDecider, type TaskChange } from './taskLifecycle.ts';

const given = deciderSpecification(taskDecider);
const laui = '65a000000000000000000001';
const taskIn = (state: string, userSetState: string | null = null): ItemEvent => ({
  type: 'ItemCreated',
  data: {
    laui,
    item_type: 'task',
    name: 't',
    parent_laui: null,
    parent_type: null,
    link_laui: null,
    is_root: false,
    fields: { state, user_set_state: userSetState },
    access: { owners: {}, editors: {}, viewers: {} } as never,
    version: 1,
    revision_laui: laui,
  },
});
const change = (changes: Record<string, unknown>, reason?: TaskChange['reason']): TaskChange => ({ changes, version: 1, revisionLaui: null, ...(reason ? { reason } : {}) });

/** The event each row of the table is recorded as (spec 3.1; the service's own rows included). */
const EVENT_OF_ROW: Record<TaskTrigger, (to: string) => TaskEventType> = {
  manual_run: () => 'TaskQueued',
  cron_dispatch: () => 'TaskQueued',
  retry_dispatch: () => 'TaskQueued',
  parallelism_available: () => 'TaskDispatched',
  worker_pickup: () => 'TaskStarted',
  operator_success: () => 'TaskSucceeded',
  operator_error: () => 'TaskErrored',
  completion_timeout: () => 'TaskTimedOut',
  cancel_observed: () => 'TaskCancelled',
  invalid_operator: () => 'TaskFailed',
  dangerously_reset: () => 'TaskReset',
  lease_reaped: () => 'TaskErrored',
  claim_released: () => 'TaskClaimReleased',
};

const RESTRICTED = new Set<TaskTrigger>(['dangerously_reset', 'claim_released']);

describe('task aggregate decider (the state table of spec 3.1)', () => {
  describe('every row of the table, from every state it leaves', () => {
    for (const row of TRANSITIONS) {
      const froms = row.from === 'any' ? TASK_STATES : row.from;
      for (const from of froms) {
        if (from === row.to) continue;
        const reason = RESTRICTED.has(row.trigger) ? row.trigger : undefined;
        it(`given a task in ${from}, when ${row.trigger} moves it to ${row.to}, then ${EVENT_OF_ROW[row.trigger](row.to)} records ${from} -> ${row.to}`, () => {
          const expected = EVENT_OF_ROW[row.trigger](row.to);
          const decided = taskDecider.decide(change({ state: row.to }, reason), taskDecider.evolve(taskDecider.initialState(), taskIn(from)));
          expect(decided).to.have.length(1);
          expect(decided[0]?.type).to.equal(expected);
          expect(decided[0]?.data).to.deep.include({ from, to: row.to, changes: { state: row.to } });
        });
      }
    }
  });

  describe('every state change the table refuses: 409 with both states', () => {
    for (const from of TASK_STATES) {
      for (const to of TASK_STATES) {
        if (from === to || allowedTransition(from, to)) continue;
        it(`given a task in ${from}, when a change without a trigger moves it to ${to}, then it is refused`, () => {
          given(taskIn(from)).when(change({ state: to })).thenFails(409, refusedTransitionDetail(from, to));
        });
      }
    }
  });

  it('given a cancelled task, when a manual run queues it, then it is refused until dangerously_reset (then allowed)', () => {
    given(taskIn('cancelled')).when(change({ state: 'queued_for_connection' })).thenFails(409, refusedTransitionDetail('cancelled', 'queued_for_connection'));
    given(taskIn('cancelled'))
      .when(change({ state: 'scheduled' }, 'dangerously_reset'))
      .then([{ type: 'TaskReset', data: { from: 'cancelled', to: 'scheduled', trigger: 'dangerously_reset', changes: { state: 'scheduled' }, version: 1, revision_laui: null } }]);
  });

  it('given a released claim row, when taken without its trigger, then it is refused (only the scheduler releases)', () => {
    given(taskIn('queued_for_connection')).when(change({ state: 'scheduled' })).thenFails(409, refusedTransitionDetail('queued_for_connection', 'scheduled'));
    given(taskIn('queued_for_connection'))
      .when(change({ state: 'success' }, 'claim_released'))
      .then([{ type: 'TaskClaimReleased', data: { from: 'queued_for_connection', to: 'success', trigger: 'claim_released', changes: { state: 'success' }, version: 1, revision_laui: null } }]);
  });

  it('given a trigger named for another row, when the change does not match it, then it is refused', () => {
    given(taskIn('running')).when(change({ state: 'scheduled' }, 'claim_released')).thenFails(409, refusedTransitionDetail('running', 'scheduled'));
  });

  it('given a scheduled task, when dangerously_reset changes only its other fields, then it is still a TaskReset', () => {
    given(taskIn('scheduled'))
      .when(change({ last_run_output: {} }, 'dangerously_reset'))
      .then([{ type: 'TaskReset', data: { from: 'scheduled', to: 'scheduled', trigger: 'dangerously_reset', changes: { last_run_output: {} }, version: 1, revision_laui: null } }]);
  });

  it('given a dispatch, when queued_in_redis is recorded, then TaskDispatched carries the execution id and session id', () => {
    given(taskIn('queued_for_connection'))
      .when(change({ state: 'queued_in_redis', session_id: 's-1', task_instance: 'd-1' }))
      .then([
        {
          type: 'TaskDispatched',
          data: { from: 'queued_for_connection', to: 'queued_in_redis', changes: { state: 'queued_in_redis', session_id: 's-1', task_instance: 'd-1' }, version: 1, revision_laui: null, execution_id: 'd-1', session_id: 's-1' },
        },
      ]);
  });

  it('given a running task, when user_set_state cancel is set, then TaskCancellationRequested (the state is kept)', () => {
    given(taskIn('running'))
      .when(change({ user_set_state: 'cancel' }))
      .then([{ type: 'TaskCancellationRequested', data: { from: 'running', to: 'running', changes: { user_set_state: 'cancel' }, version: 1, revision_laui: null } }]);
  });

  it('given a pre-action that did not pass, when its record is written, then TaskSkipped (the state is kept)', () => {
    const actions = { actions_status: { pre_actions: [{ state: 'failed' }] } };
    given(taskIn('success'))
      .when(change(actions, 'pre_actions_skipped'))
      .then([{ type: 'TaskSkipped', data: { from: 'success', to: 'success', changes: actions, version: 1, revision_laui: null } }]);
  });

  it('given runtime fields without a state change, cancel or skip, when changed, then no lifecycle event (the catalog records an ItemUpdated)', () => {
    given(taskIn('running')).when(change({ latest_heartbeat: '2026-01-01T00:00:00.000Z' })).then([]);
    given(taskIn('running')).when(change({})).then([]);
  });

  it('given a sequence of named events, when folded, then the state and user_set_state follow them', () => {
    const events: ItemEvent[] = [
      taskIn('scheduled'),
      ...taskDecider.decide(change({ state: 'queued_for_connection' }), { state: 'scheduled', userSetState: null }),
    ];
    const queued = events.reduce(taskDecider.evolve, taskDecider.initialState());
    expect(queued).to.deep.equal({ state: 'queued_for_connection', userSetState: null });
    const cancelled = taskDecider.decide(change({ user_set_state: 'cancel' }), queued).reduce(taskDecider.evolve, queued);
    expect(cancelled).to.deep.equal({ state: 'queued_for_connection', userSetState: 'cancel' });
  });
  describe('the rows of spec 3.1 as the spec writes them (not read from the code\'s table)', () => {
    const SPEC_ROWS: ReadonlyArray<[from: string, to: string, event: TaskEventType]> = [
      ['scheduled', 'queued_for_connection', 'TaskQueued'],
      ['queued_for_connection', 'queued_in_redis', 'TaskDispatched'],
      ['queued_in_redis', 'running', 'TaskStarted'],
      ['running', 'success', 'TaskSucceeded'],
      ['running', 'error', 'TaskErrored'],
      ['running', 'timeout', 'TaskTimedOut'],
      ['running', 'cancelled', 'TaskCancelled'],
      ['running', 'fail', 'TaskFailed'],
      ['error', 'queued_for_connection', 'TaskQueued'],
      ['timeout', 'queued_for_connection', 'TaskQueued'],
    ];
    for (const [from, to, event] of SPEC_ROWS) {
      it(`given a task in ${from}, when it moves to ${to}, then ${event}`, () => {
        given(taskIn(from))
          .when(change({ state: to }))
          .then([{ type: event, data: { from, to, changes: { state: to }, version: 1, revision_laui: null, ...(event === 'TaskDispatched' ? { execution_id: null, session_id: null } : {}) } } as ItemEvent]);
      });
    }

    it('given a task in any state, when POST /task/dangerously_reset moves it to scheduled, then TaskReset', () => {
      for (const from of TASK_STATES.filter((state) => state !== 'scheduled')) {
        given(taskIn(from))
          .when(change({ state: 'scheduled' }, 'dangerously_reset'))
          .then([{ type: 'TaskReset', data: { from, to: 'scheduled', trigger: 'dangerously_reset', changes: { state: 'scheduled' }, version: 1, revision_laui: null } }]);
      }
    });
  });

  describe('every state change a named trigger\'s rows do not allow: 409 with both states', () => {
    /** Of the 90 changes between the ten states: dangerously_reset makes 9 (any -> scheduled), claim_released 4. */
    const REFUSED = { dangerously_reset: 81, claim_released: 86 } as const;
    for (const trigger of ['dangerously_reset', 'claim_released'] as const) {
      it(`given a task in any state, when ${trigger} names a change its rows do not make, then it is refused`, () => {
        let refused = 0;
        for (const from of TASK_STATES) {
          for (const to of TASK_STATES) {
            if (from === to || allowedTransition(from, to, trigger)) continue;
            given(taskIn(from)).when(change({ state: to }, trigger)).thenFails(409, refusedTransitionDetail(from, to));
            refused += 1;
          }
        }
        expect(refused).to.equal(REFUSED[trigger]);
      });
    }

    it('given a pre-action skip, when it also changes the state, then the table without restricted rows applies', () => {
      given(taskIn('success')).when(change({ state: 'running' }, 'pre_actions_skipped')).thenFails(409, refusedTransitionDetail('success', 'running'));
    });
  });

  it('given task items, when folded, then a missing state is scheduled, a non-string user_set_state none, and events without changes keep both', () => {
    const fold = (...events: ItemEvent[]) => events.reduce(taskDecider.evolve, taskDecider.initialState());
    expect(fold()).to.deep.equal({ state: 'none', userSetState: null });
    const withoutState = { type: 'ItemCreated', data: { ...(taskIn('running') as Extract<ItemEvent, { type: 'ItemCreated' }>).data, fields: { user_set_state: 7 } } } as ItemEvent;
    expect(fold(withoutState)).to.deep.equal({ state: 'scheduled', userSetState: null });
    expect(fold(taskIn('running', 'cancel'), { type: 'ItemAccessChanged', data: { access: { owners: {}, editors: {}, viewers: {} } } }, { type: 'ItemSoftDeleted', data: { at: 'x' } })).to.deep.equal({
      state: 'running',
      userSetState: 'cancel',
    });
    expect(fold(taskIn('running', 'cancel'), { type: 'ItemUpdated', data: { changes: { user_set_state: null, state: 'cancelled' }, version: 1, revision_laui: null } })).to.deep.equal({
      state: 'cancelled',
      userSetState: null,
    });
  });
});
