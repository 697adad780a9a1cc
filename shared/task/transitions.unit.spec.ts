import { expect } from 'chai';
import { TASK_STATES } from '../item-types/schemas/task.ts';
import type { TaskRecord } from './taskFields.ts';
import {
  allowedTransition,
  canTransition,
  fromStatesOf,
  manualRunRefusal,
  refusedTransitionDetail,
  cancelledChanges,
  dangerousResetChanges,
  enqueueChanges,
  brokerDispatchChanges,
  failChanges,
  failureChanges,
  isCompletionTimedOut,
  isHeartbeatStale,
  runLogicalDate,
  successChanges,
  transitionTarget,
  workerPickupChanges,
  runChanges,
  type RunTrigger,
  type TaskTrigger,
} from './transitions.ts';

const NOW = new Date('2024-06-15T12:00:00.000Z');

const daily = (overrides: TaskRecord = {}): TaskRecord => ({
  frequency: '0 0 * * *',
  start_date: '2024-01-01T00:00:00.000Z',
  end_date: '2024-12-31T00:00:00.000Z',
  logical_date: '2024-06-15T00:00:00.000Z',
  next_run_date: '2024-06-15T00:00:00.000Z',
  state: 'running',
  retry_number: 0,
  total_retries: 0,
  iteration: 4,
  ...overrides,
});

describe('task state machine: allowed transitions (spec 3.1)', () => {
  it('given each row of the spec table, when checked, then the transition is allowed', () => {
    const rows: Array<[string, string]> = [
      ['scheduled', 'queued_for_connection'],
      ['queued_for_connection', 'queued_in_redis'],
      ['queued_in_redis', 'running'],
      ['running', 'success'],
      ['running', 'error'],
      ['running', 'timeout'],
      ['running', 'cancelled'],
      ['running', 'fail'],
      ['error', 'queued_for_connection'],
      ['timeout', 'queued_for_connection'],
      ['success', 'queued_for_connection'],
    ];
    for (const [from, to] of rows) expect(canTransition(from, to), `${from} -> ${to}`).to.equal(true);
  });

  it('given any state, when dangerously reset, then the target is scheduled', () => {
    for (const state of TASK_STATES) expect(transitionTarget(state, 'dangerously_reset')).to.equal('scheduled');
  });

  it('given transitions the spec does not allow, when checked, then they are refused', () => {
    const refused: Array<[string, string]> = [
      ['scheduled', 'running'],
      ['queued_for_connection', 'running'],
      ['running', 'queued_in_redis'],
      ['success', 'running'],
      ['fail', 'success'],
      ['cancelled', 'queued_for_connection'],
    ];
    for (const [from, to] of refused) expect(canTransition(from, to), `${from} -> ${to}`).to.equal(false);
  });

  it('given the cron and manual triggers, when applied, then the cron takes schedulable and retry states and a manual run any idle state but cancelled', () => {
    expect(transitionTarget('scheduled', 'cron_dispatch')).to.equal('queued_for_connection');
    expect(transitionTarget('error', 'cron_dispatch')).to.equal(null);
    expect(transitionTarget('error', 'retry_dispatch')).to.equal('queued_for_connection');
    expect(transitionTarget('scheduled', 'retry_dispatch')).to.equal(null);
    for (const state of ['created', 'scheduled', 'success', 'error', 'timeout', 'fail']) {
      expect(transitionTarget(state, 'manual_run'), state).to.equal('queued_for_connection');
    }
    for (const state of ['cancelled', 'queued_for_connection', 'queued_in_redis', 'running']) {
      expect(transitionTarget(state, 'manual_run'), state).to.equal(null);
    }
  });

  it('given the simple transitions, when their changes are asked, then only the state changes', () => {
    expect(enqueueChanges()).to.deep.equal({ state: 'queued_for_connection' });
    expect(brokerDispatchChanges()).to.deep.equal({ state: 'queued_in_redis' });
    expect(cancelledChanges()).to.deep.equal({ state: 'cancelled' });
    expect(failChanges()).to.deep.equal({ state: 'fail' });
  });
});

describe('task state machine: what the API allows (issue 19)', () => {
  it('given a change naming no trigger, when checked, then every row but the restricted ones applies', () => {
    expect(allowedTransition('scheduled', 'queued_for_connection')).to.equal(true);
    expect(allowedTransition('running', 'success')).to.equal(true);
    expect(allowedTransition('queued_in_redis', 'error'), 'a reaped dispatch').to.equal(true);
    expect(allowedTransition('cancelled', 'queued_for_connection')).to.equal(false);
    expect(allowedTransition('cancelled', 'scheduled'), 'reset only through its route').to.equal(false);
    expect(allowedTransition('queued_for_connection', 'scheduled'), 'claim release only by the scheduler').to.equal(false);
    expect(allowedTransition('scheduled', 'running')).to.equal(false);
  });

  it('given a change naming its trigger, when checked, then only that row applies', () => {
    for (const state of TASK_STATES) expect(allowedTransition(state, 'scheduled', 'dangerously_reset'), state).to.equal(true);
    expect(allowedTransition('queued_for_connection', 'success', 'claim_released')).to.equal(true);
    expect(allowedTransition('running', 'success', 'dangerously_reset')).to.equal(false);
  });

  it('given a manual run, when the state is cancelled, then it is refused naming dangerously_reset; idle and in-flight states pass', () => {
    expect(manualRunRefusal('cancelled')).to.include('cancelled -> queued_for_connection').and.include('dangerously_reset');
    for (const state of ['created', 'scheduled', 'success', 'error', 'timeout', 'fail', 'queued_for_connection', 'queued_in_redis', 'running']) {
      expect(manualRunRefusal(state), state).to.equal(null);
    }
    expect(refusedTransitionDetail('scheduled', 'running')).to.equal('Invalid task state transition: scheduled -> running is not allowed by the task state table (spec 3.1)');
  });

  it('given triggers, when their from states are asked, then the rows give them', () => {
    expect(fromStatesOf('operator_success')).to.deep.equal(['running']);
    expect(fromStatesOf('lease_reaped')).to.deep.equal(['queued_in_redis', 'running']);
    expect(fromStatesOf('dangerously_reset')).to.have.members([...TASK_STATES]);
  });
});

describe('task state machine: worker pick-up', () => {
  it('given a daily task, when a worker picks it up, then iteration, start, heartbeat and the one-day data interval are set', () => {
    expect(workerPickupChanges(daily({ state: 'queued_in_redis' }), NOW)).to.deep.equal({
      state: 'running',
      iteration: 5,
      task_instance_start_date: '2024-06-15T12:00:00.000Z',
      latest_heartbeat: '2024-06-15T12:00:00.000Z',
      data_interval_start: '2024-06-15T00:00:00.000Z',
      data_interval_end: '2024-06-16T00:00:00.000Z',
    });
  });

  it('given a 31st-of-month task, when picked up, then the data interval skips months without a 31st', () => {
    const changes = workerPickupChanges(daily({ frequency: '0 0 31 * *', logical_date: '2024-01-01T00:00:00.000Z' }), NOW);
    expect([changes.data_interval_start, changes.data_interval_end]).to.deep.equal(['2024-01-01T00:00:00.000Z', '2024-03-01T00:00:00.000Z']);
  });

  it('given an ADHOC task without iteration, when picked up, then iteration is 1 and the data interval is empty', () => {
    const changes = workerPickupChanges({ frequency: 'ADHOC', logical_date: '2024-06-15T11:00:00.000Z' }, NOW);
    expect(changes.iteration).to.equal(1);
    expect([changes.data_interval_start, changes.data_interval_end]).to.deep.equal(['2024-06-15T11:00:00.000Z', '2024-06-15T11:00:00.000Z']);
  });
});

describe('task state machine: success', () => {
  it('given a daily task that is up to date, when it succeeds, then logical_date and next_run_date advance one step and retries reset', () => {
    const task = daily({
      retry_number: 2,
      next_run_date: '2024-06-15T00:00:00.000Z',
      data_interval_start: '2024-06-15T00:00:00.000Z',
      data_interval_end: '2024-06-16T00:00:00.000Z',
    });
    expect(successChanges(task, NOW)).to.deep.equal({
      changes: {
        state: 'success',
        retry_number: 0,
        prev_interval_start: '2024-06-15T00:00:00.000Z',
        prev_interval_end: '2024-06-16T00:00:00.000Z',
        logical_date: '2024-06-16T00:00:00.000Z',
        next_run_date: '2024-06-16T00:00:00.000Z',
      },
      dispatchNow: false,
    });
  });

  it('given a task behind schedule, when it succeeds, then next_run_date advances from the previous one (not from now) and the next run is dispatched at once', () => {
    const outcome = successChanges(daily({ logical_date: '2024-06-10T00:00:00.000Z', next_run_date: '2024-06-10T00:00:00.000Z' }), NOW);
    expect(outcome.changes.logical_date).to.equal('2024-06-11T00:00:00.000Z');
    expect(outcome.changes.next_run_date).to.equal('2024-06-11T00:00:00.000Z');
    expect(outcome.dispatchNow).to.equal(true);
  });

  it('given a task behind schedule whose next run is after end_date, when it succeeds, then nothing is dispatched at once', () => {
    const outcome = successChanges(
      daily({ logical_date: '2024-06-10T00:00:00.000Z', next_run_date: '2024-06-10T00:00:00.000Z', end_date: '2024-06-10T12:00:00.000Z' }),
      NOW,
    );
    expect(outcome.dispatchNow).to.equal(false);
  });

  it('given no data interval and no next_run_date, when it succeeds, then prev interval comes from logical_date and next_run_date from now', () => {
    const outcome = successChanges(daily({ next_run_date: null }), NOW);
    expect(outcome.changes.prev_interval_start).to.equal('2024-06-15T00:00:00.000Z');
    expect(outcome.changes.prev_interval_end).to.equal('2024-06-16T00:00:00.000Z');
    expect(outcome.changes.next_run_date).to.equal('2024-06-16T00:00:00.000Z');
  });

  it('given month-end and leap-day schedules, when they succeed, then next_run_date skips to the next existing date', () => {
    const monthEnd = successChanges(
      daily({ frequency: '0 0 31 * *', logical_date: '2024-01-01T00:00:00.000Z', next_run_date: '2024-01-31T00:00:00.000Z' }),
      new Date('2024-01-31T01:00:00Z'),
    );
    expect(monthEnd.changes.logical_date).to.equal('2024-03-01T00:00:00.000Z');
    expect(monthEnd.changes.next_run_date).to.equal('2024-03-31T00:00:00.000Z');
    const leap = successChanges(
      daily({ frequency: '0 0 29 2 *', end_date: null, logical_date: '2024-01-01T00:00:00.000Z', next_run_date: '2024-02-29T00:00:00.000Z' }),
      new Date('2024-02-29T01:00:00Z'),
    );
    expect(leap.changes.logical_date).to.equal('2028-01-01T00:00:00.000Z');
    expect(leap.changes.next_run_date).to.equal('2028-02-29T00:00:00.000Z');
  });

  it('given an ADHOC task, when it succeeds, then logical_date and next_run_date are unchanged', () => {
    const outcome = successChanges({ frequency: 'ADHOC', logical_date: '2024-06-15T11:00:00.000Z', retry_number: 1 }, NOW);
    expect(outcome).to.deep.equal({
      changes: {
        state: 'success',
        retry_number: 0,
        prev_interval_start: '2024-06-15T11:00:00.000Z',
        prev_interval_end: '2024-06-15T11:00:00.000Z',
      },
      dispatchNow: false,
    });
  });
});

describe('task state machine: error and timeout', () => {
  it('given a failure, when recorded, then retry_number increments and eligibility is retry_number < total_retries', () => {
    expect(failureChanges(daily({ total_retries: 3, retry_number: 0 }), 'error')).to.deep.equal({
      changes: { state: 'error', retry_number: 1 },
      retryEligible: true,
    });
    expect(failureChanges(daily({ total_retries: 3, retry_number: 2 }), 'timeout')).to.deep.equal({
      changes: { state: 'timeout', retry_number: 3 },
      retryEligible: false,
    });
    expect(failureChanges(daily({ total_retries: 0, retry_number: undefined }), 'error')).to.deep.equal({
      changes: { state: 'error', retry_number: 1 },
      retryEligible: false,
    });
  });
});

describe('task state machine: dangerously_reset (spec 4.2)', () => {
  it('given any task, when reset, then state, output, cancel request and action statuses are cleared and the system date set', () => {
    expect(dangerousResetChanges(NOW)).to.deep.equal({
      state: 'scheduled',
      last_run_output: {},
      user_set_state: null,
      actions_status: { pre_actions: [], running_actions: [], post_actions: [] },
      last_system_updated_date: '2024-06-15T12:00:00.000Z',
    });
  });
});

describe('task state machine: run logical date, timeout and stale heartbeat', () => {
  it('given a run-time logical_date, when a run is queued, then it is written as given, ADHOC or scheduled, whoever starts it', () => {
    expect(runLogicalDate(daily(), '2024-03-05T17:30:00Z', NOW, 'user')).to.equal('2024-03-05T17:30:00Z');
    expect(runLogicalDate({ frequency: 'ADHOC', logical_date: '2024-01-01T10:00:00.000Z' }, '2024-03-05T17:30:00Z', NOW, 'user')).to.equal('2024-03-05T17:30:00Z');
  });

  it('given an ADHOC task with an old logical_date, when a user runs it again, then the run gets the current UTC (spec 2.4; issue 33)', () => {
    expect(runLogicalDate({ frequency: 'ADHOC', logical_date: '2024-01-01T10:00:00.000Z' }, undefined, NOW, 'user')).to.equal(NOW.toISOString());
    expect(runLogicalDate({ logical_date: '2024-01-01T10:00:00.000Z' }, null, NOW, 'user'), 'ADHOC is the default frequency').to.equal(NOW.toISOString());
    expect(runLogicalDate({ frequency: 'ADHOC', logical_date: null }, undefined, NOW, 'user')).to.equal(NOW.toISOString());
  });

  it('given a scheduler retry of an ADHOC run, when queued, then the failed run\'s date is kept (now when it has none)', () => {
    expect(runLogicalDate({ frequency: 'ADHOC', logical_date: '2024-01-01T10:00:00.000Z' }, undefined, NOW, 'scheduler')).to.equal(null);
    expect(runLogicalDate({ frequency: 'ADHOC', logical_date: null }, undefined, NOW, 'scheduler')).to.equal(NOW.toISOString());
  });

  it('given a scheduled task and no logical_date in the request, when queued, then the date its schedule set is left alone', () => {
    expect(runLogicalDate(daily(), undefined, NOW, 'user')).to.equal(null);
    expect(runLogicalDate(daily(), undefined, NOW, 'scheduler')).to.equal(null);
  });

  it('given a running task, when its completion timeout is reached, then it is timed out; not before, and never when not running', () => {
    const task = daily({ state: 'running', task_instance_start_date: '2024-06-15T11:00:00.000Z' });
    expect(isCompletionTimedOut(task, NOW, 3600)).to.equal(true);
    expect(isCompletionTimedOut(task, NOW, 3601)).to.equal(false);
    expect(isCompletionTimedOut({ ...task, state: 'success' }, NOW, 60)).to.equal(false);
  });

  it('given a running task, when its heartbeat is older than the stale limit, then it is stale; the start date stands in for a missing heartbeat', () => {
    const task = daily({ state: 'running', latest_heartbeat: '2024-06-15T11:59:00.000Z', task_instance_start_date: '2024-06-15T11:00:00.000Z' });
    expect(isHeartbeatStale(task, NOW, 60)).to.equal(false);
    expect(isHeartbeatStale(task, NOW, 59)).to.equal(true);
    expect(isHeartbeatStale({ ...task, latest_heartbeat: null }, NOW, 60)).to.equal(true);
    expect(isHeartbeatStale({ ...task, state: 'queued_in_redis' }, NOW, 1)).to.equal(false);
  });
});

describe('task lifecycle: callers name triggers, the table names the state (issue 34)', () => {
  const at = NOW;
  // Each trigger with the table row it takes, from a state that row leaves.
  const rows: Array<[RunTrigger, TaskTrigger, string]> = [
    [{ trigger: 'RunRequested', origin: 'user', at, totalRetries: 2, retryInterval: 60, runBy: 'u1' }, 'manual_run', 'success'],
    [{ trigger: 'Claimed', at }, 'cron_dispatch', 'scheduled'],
    [{ trigger: 'SlotLeased', at, sessionId: 's1', dispatchId: 'd1' }, 'parallelism_available', 'queued_for_connection'],
    [{ trigger: 'PickedUp', at }, 'worker_pickup', 'queued_in_redis'],
    [{ trigger: 'Succeeded', at }, 'operator_success', 'running'],
    [{ trigger: 'Errored', at }, 'operator_error', 'running'],
    [{ trigger: 'TimedOut', at }, 'completion_timeout', 'running'],
    [{ trigger: 'Cancelled', at }, 'cancel_observed', 'running'],
    [{ trigger: 'Failed', at }, 'invalid_operator', 'running'],
    [{ trigger: 'Reaped', at }, 'lease_reaped', 'running'],
    [{ trigger: 'Reset', at }, 'dangerously_reset', 'cancelled'],
    [{ trigger: 'ClaimReleased', to: 'scheduled' }, 'claim_released', 'queued_for_connection'],
  ];

  for (const [command, row, from] of rows) {
    it(`given ${command.trigger} from ${from}, when its changes are made, then the state is the target of the ${row} row`, () => {
      const { changes } = runChanges(command, daily({ state: from }));
      expect(changes.state).to.equal(transitionTarget(from, row));
      expect(allowedTransition(from, String(changes.state), row === 'dangerously_reset' || row === 'claim_released' ? row : undefined)).to.equal(true);
    });
  }

  it('given the fields each row implies, when made, then they are those of the row (retries, session, pick-up, success)', () => {
    expect(runChanges({ trigger: 'RunRequested', origin: 'user', at, totalRetries: 2, retryInterval: 60, runBy: 'u1' }, daily({ state: 'success' })).changes).to.deep.include({ user_set_state: null, total_retries: 2, retry_interval: 60, run_by: 'u1', last_system_updated_date: NOW.toISOString() });
    expect(runChanges({ trigger: 'SlotLeased', at, sessionId: 's1', dispatchId: 'd1' }, {}).changes).to.deep.equal({ state: 'queued_in_redis', session_id: 's1', task_instance: 'd1', last_system_updated_date: NOW.toISOString() });
    expect(runChanges({ trigger: 'PickedUp', at }, daily({ state: 'queued_in_redis' })).changes).to.deep.equal({ ...workerPickupChanges(daily(), NOW) });
    const success = runChanges({ trigger: 'Succeeded', at }, daily());
    expect(success).to.deep.equal(successChanges(daily(), NOW));
    expect(runChanges({ trigger: 'Errored', at }, daily({ retry_number: 1 })).changes).to.deep.equal({ state: 'error', retry_number: 2 });
  });
});
