import { expect } from 'chai';
import { isReadyToRun, readyToRunDecision, schedulerDue, type ReadyContext } from './readyToRun.ts';
import type { TaskRecord } from './taskFields.ts';

const PROJECT = 'bbbbbbbbbbbbbbbbbbbbbbb1';
const NOW = new Date('2024-06-15T12:00:00.000Z');
const context = (overrides: Partial<ReadyContext> = {}): ReadyContext => ({
  projectLaui: PROJECT,
  workflowState: 'ACTIVE',
  now: NOW,
  ...overrides,
});

const readyTask = (overrides: TaskRecord = {}): TaskRecord => ({
  item_type: 'task',
  project_laui: PROJECT,
  deleted_at: null,
  frequency: '0 0 * * *',
  start_date: '2024-01-01T00:00:00.000Z',
  end_date: '2024-12-31T00:00:00.000Z',
  logical_date: '2024-06-15T00:00:00.000Z',
  next_run_date: '2024-06-15T00:00:00.000Z',
  state: 'scheduled',
  user_set_state: null,
  total_retries: 3,
  retry_number: 1,
  retry_interval: 10,
  last_run_date: '2024-06-15T11:50:00.000Z',
  ...overrides,
});

const retryTask = (overrides: TaskRecord = {}): TaskRecord => readyTask({ state: 'error', ...overrides });

describe('tasks_ready_to_run: normal path (spec 4.3)', () => {
  it('given a scheduled task with logical_date <= now, when checked, then it is ready on the normal path', () => {
    expect(readyToRunDecision(readyTask(), context())).to.deep.equal({ ready: true, path: 'normal' });
    expect(isReadyToRun(readyTask({ state: 'success' }), context())).to.equal(true);
  });

  it('given logical_date equal to now, when checked, then it is ready; 1 ms later it is not', () => {
    expect(isReadyToRun(readyTask({ logical_date: NOW.toISOString() }), context())).to.equal(true);
    expect(readyToRunDecision(readyTask({ logical_date: '2024-06-15T12:00:00.001Z' }), context())).to.deep.equal({
      ready: false,
      reason: 'logical_date_in_future',
    });
  });

  it('given logical_date equal to end_date or no end_date, when checked, then it is ready', () => {
    expect(isReadyToRun(readyTask({ end_date: '2024-06-15T00:00:00.000Z' }), context())).to.equal(true);
    expect(isReadyToRun(readyTask({ end_date: null }), context())).to.equal(true);
  });

  const exclusions: Array<[string, TaskRecord, Partial<ReadyContext>, string]> = [
    ['an item that is not a task', { item_type: 'action' }, {}, 'not_a_task'],
    ['no item_type', { item_type: undefined }, {}, 'not_a_task'],
    ['another project', { project_laui: 'bbbbbbbbbbbbbbbbbbbbbbb2' }, {}, 'other_project'],
    ['a soft-deleted task', { deleted_at: '2024-06-01T00:00:00.000Z' }, {}, 'deleted'],
    ['user_set_state cancel', { user_set_state: 'cancel' }, {}, 'cancel_requested'],
    ['a paused workflow', {}, { workflowState: 'PAUSE' }, 'workflow_paused'],
    ['no start_date (ADHOC)', { start_date: null, frequency: 'ADHOC' }, {}, 'not_started'],
    ['start_date equal to now', { start_date: NOW.toISOString() }, {}, 'not_started'],
    ['start_date in the future', { start_date: '2024-07-01T00:00:00.000Z' }, {}, 'not_started'],
    ['logical_date after end_date', { end_date: '2024-06-14T23:59:59.999Z' }, {}, 'past_end_date'],
    ['no logical_date with an end_date', { logical_date: null }, {}, 'past_end_date'],
    ['no logical_date and no end_date', { logical_date: null, end_date: null }, {}, 'logical_date_in_future'],
    ['state running', { state: 'running' }, {}, 'state_not_runnable'],
    ['state queued_for_connection', { state: 'queued_for_connection' }, {}, 'state_not_runnable'],
    ['state queued_in_redis', { state: 'queued_in_redis' }, {}, 'state_not_runnable'],
    ['state created', { state: 'created' }, {}, 'state_not_runnable'],
    ['state cancelled', { state: 'cancelled' }, {}, 'state_not_runnable'],
    ['state fail', { state: 'fail' }, {}, 'state_not_runnable'],
  ];
  for (const [what, overrides, contextOverrides, reason] of exclusions) {
    it(`given ${what}, when checked, then it is excluded (${reason})`, () => {
      expect(readyToRunDecision(readyTask(overrides), context(contextOverrides))).to.deep.equal({ ready: false, reason });
    });
  }

  it('given an unknown or missing workflow state, when checked, then only PAUSE excludes', () => {
    expect(isReadyToRun(readyTask(), context({ workflowState: null }))).to.equal(true);
    expect(isReadyToRun(readyTask(), context({ workflowState: 'ACTIVE' }))).to.equal(true);
  });
});

describe('tasks_ready_to_run: retry path (spec 4.3)', () => {
  it('given an error or timeout task whose retry interval elapsed, when checked, then it is ready on the retry path', () => {
    expect(readyToRunDecision(retryTask(), context())).to.deep.equal({ ready: true, path: 'retry' });
    expect(readyToRunDecision(retryTask({ state: 'timeout' }), context())).to.deep.equal({ ready: true, path: 'retry' });
  });

  it('given last_run_date + retry_interval minutes exactly now, when checked, then it is ready; 1 ms short it is not', () => {
    expect(isReadyToRun(retryTask({ last_run_date: '2024-06-15T11:50:00.000Z' }), context())).to.equal(true);
    expect(readyToRunDecision(retryTask({ last_run_date: '2024-06-15T11:50:00.001Z' }), context())).to.deep.equal({
      ready: false,
      reason: 'retry_interval_not_elapsed',
    });
  });

  it('given a retry whose logical_date is in the future, when checked, then it is still ready (no logical_date condition on retries)', () => {
    expect(isReadyToRun(retryTask({ logical_date: '2024-06-20T00:00:00.000Z' }), context())).to.equal(true);
  });

  it('given no retries configured or retries used up, when checked, then it is excluded', () => {
    expect(readyToRunDecision(retryTask({ total_retries: 0, retry_number: 0 }), context())).to.deep.equal({
      ready: false,
      reason: 'retries_exhausted',
    });
    expect(readyToRunDecision(retryTask({ total_retries: 3, retry_number: 3 }), context())).to.deep.equal({
      ready: false,
      reason: 'retries_exhausted',
    });
    expect(isReadyToRun(retryTask({ total_retries: 3, retry_number: 2 }), context())).to.equal(true);
  });

  it('given no last_run_date, when checked, then the retry path is not taken', () => {
    expect(readyToRunDecision(retryTask({ last_run_date: null }), context())).to.deep.equal({
      ready: false,
      reason: 'retry_interval_not_elapsed',
    });
  });

  it('given the default retry_interval of 1 minute, when checked, then one minute after the last run it is ready', () => {
    const task = retryTask({ retry_interval: undefined, last_run_date: '2024-06-15T11:59:00.000Z' });
    expect(isReadyToRun(task, context())).to.equal(true);
    expect(isReadyToRun({ ...task, last_run_date: '2024-06-15T11:59:00.001Z' }, context())).to.equal(false);
  });

  it('given a retry task with a common exclusion, when checked, then the exclusion wins', () => {
    expect(isReadyToRun(retryTask({ user_set_state: 'cancel' }), context())).to.equal(false);
    expect(isReadyToRun(retryTask(), context({ workflowState: 'PAUSE' }))).to.equal(false);
    expect(isReadyToRun(retryTask({ end_date: '2024-06-01T00:00:00.000Z' }), context())).to.equal(false);
  });
});

describe('scheduler cycle selection (spec 4.5)', () => {
  it('given a scheduled task with next_run_date <= now and <= end_date, when checked, then it is due', () => {
    expect(schedulerDue(readyTask(), NOW)).to.deep.equal({ ready: true, path: 'scheduled' });
    expect(schedulerDue(readyTask({ state: 'success' }), NOW)).to.deep.equal({ ready: true, path: 'scheduled' });
    expect(schedulerDue(readyTask({ next_run_date: NOW.toISOString(), end_date: NOW.toISOString() }), NOW).ready).to.equal(true);
    expect(schedulerDue(readyTask({ end_date: null }), NOW).ready).to.equal(true);
  });

  const exclusions: Array<[string, TaskRecord, string | null, string]> = [
    ['next_run_date in the future', { next_run_date: '2024-06-15T12:00:00.001Z' }, null, 'next_run_date_in_future'],
    ['no next_run_date', { next_run_date: null }, null, 'next_run_date_in_future'],
    ['next_run_date after end_date', { end_date: '2024-06-14T00:00:00.000Z' }, null, 'next_run_date_after_end_date'],
    ['an ADHOC task', { frequency: 'ADHOC' }, null, 'adhoc'],
    ['a paused workflow', {}, 'PAUSE', 'workflow_paused'],
    ['a deleted task', { deleted_at: '2024-06-01T00:00:00.000Z' }, null, 'deleted'],
    ['a cancel request', { user_set_state: 'cancel' }, null, 'cancel_requested'],
    ['a running task', { state: 'running' }, null, 'state_not_runnable'],
    ['a non-task item', { item_type: 'config' }, null, 'not_a_task'],
  ];
  for (const [what, overrides, workflowState, reason] of exclusions) {
    it(`given ${what}, when checked, then it is not due (${reason})`, () => {
      expect(schedulerDue(readyTask(overrides), NOW, workflowState)).to.deep.equal({ ready: false, reason });
    });
  }

  it('given a retry-eligible task, ADHOC included, when checked, then it is due on the retry path', () => {
    expect(schedulerDue(retryTask(), NOW)).to.deep.equal({ ready: true, path: 'retry' });
    expect(schedulerDue(retryTask({ frequency: 'ADHOC', start_date: null, end_date: null }), NOW)).to.deep.equal({
      ready: true,
      path: 'retry',
    });
  });

  it('given a retry whose interval has not elapsed or whose retries are used up, when checked, then it is not due', () => {
    expect(schedulerDue(retryTask({ last_run_date: '2024-06-15T11:55:00.000Z' }), NOW)).to.deep.equal({
      ready: false,
      reason: 'retry_interval_not_elapsed',
    });
    expect(schedulerDue(retryTask({ retry_number: 3 }), NOW)).to.deep.equal({ ready: false, reason: 'retries_exhausted' });
  });
});
