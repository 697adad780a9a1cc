import { expect } from 'chai';
import { deciderSpecification } from '../../test/support/deciderSpecification.ts';
import type { ItemEvent } from '../../shared/domain-events/itemEvents.ts';
import { refusedTransitionDetail } from '../../shared/task/transitions.ts';
import { claimDecider, releaseDecider } from './claimDueTask.ts';

const TASK = '65a000000000000000000001';
const REVISION = '65a0000000000000000000e1';
const now = new Date('2024-06-10T12:00:00.000Z');
const AT = '2024-06-10T12:00:00.500Z';
const DAILY = { frequency: '0 0 * * *', start_date: '2024-06-03T01:00:00.000Z', end_date: '2024-07-01T00:00:00.000Z', logical_date: '2024-06-09T00:00:00.000Z' };

const created = (fields: Record<string, unknown>, itemType = 'task'): ItemEvent => ({
  type: 'ItemCreated',
  data: {
    laui: TASK,
    item_type: itemType,
    name: 'daily',
    parent_laui: null,
    parent_type: null,
    link_laui: null,
    is_root: false,
    fields: { ...DAILY, ...fields },
    access: { owners: {}, editors: {}, viewers: {} },
    version: 4,
    revision_laui: TASK,
  },
});
const due = (state: string, fields: Record<string, unknown> = {}) => created({ state, next_run_date: '2024-06-10T00:00:00.000Z', ...fields });
/** A failed run that may be retried now: 1 of 3 retries used, the 1-minute interval elapsed. */
const retryable = (state: string, fields: Record<string, unknown> = {}) =>
  created({ state, next_run_date: '2024-06-11T00:00:00.000Z', total_retries: 3, retry_number: 1, retry_interval: 1, last_run_date: '2024-06-10T11:00:00.000Z', ...fields });
const claim = (workflowState: string | null = 'ACTIVE') => ({ now, workflowState, revisionLaui: REVISION, at: AT });
/** The claim is the state table's cron pick-up: TaskQueued, unversioned (a runtime change). */
const queued = (from: string): ItemEvent[] => [
  {
    type: 'TaskQueued',
    data: { from, to: 'queued_for_connection', changes: { state: 'queued_for_connection', last_system_updated_date: AT }, version: 4, revision_laui: null },
  },
];

describe('scheduler claim decider (cron pick-up on the task stream)', () => {
  const given = deciderSpecification(claimDecider);

  it('given a scheduled or succeeded task whose next_run_date has come, when claimed, then TaskQueued from its state', () => {
    given(due('scheduled')).when(claim()).then(queued('scheduled'));
    given(due('success')).when(claim(null)).then(queued('success'));
  });

  it('given a failed or timed-out task eligible for a retry, when claimed, then TaskQueued from its state', () => {
    given(retryable('error')).when(claim()).then(queued('error'));
    given(retryable('timeout')).when(claim()).then(queued('timeout'));
  });

  it('given no task, another item type or a deleted task, when claimed, then nothing is recorded', () => {
    given().when(claim()).then([]);
    given(due('scheduled'), { type: 'ItemSoftDeleted', data: { at: AT } }).when(claim()).then([]);
    given(created({ state: 'scheduled', next_run_date: '2024-06-10T00:00:00.000Z' }, 'folder.workflow')).when(claim()).then([]);
  });

  it('given a due task under a paused workflow or with a cancel request, when claimed, then nothing is recorded', () => {
    given(due('scheduled')).when(claim('PAUSE')).then([]);
    given(due('scheduled', { user_set_state: 'cancel' })).when(claim()).then([]);
  });

  it('given a task not due (ADHOC, next run later or after its end_date), when claimed, then nothing is recorded', () => {
    given(due('scheduled', { frequency: 'ADHOC' })).when(claim()).then([]);
    given(created({ state: 'scheduled', next_run_date: '2024-06-11T00:00:00.000Z' })).when(claim()).then([]);
    given(due('scheduled', { end_date: '2024-06-09T00:00:00.000Z' })).when(claim()).then([]);
  });

  it('given a failed task whose retries are used up or whose interval has not elapsed, when claimed, then nothing is recorded', () => {
    given(retryable('error', { retry_number: 3 })).when(claim()).then([]);
    given(retryable('timeout', { retry_interval: 120 })).when(claim()).then([]);
  });

  it('given a task already claimed, running or in any other state the scheduler does not pick, when claimed, then nothing is recorded', () => {
    for (const state of ['created', 'queued_for_connection', 'queued_in_redis', 'running', 'cancelled', 'fail']) given(due(state)).when(claim()).then([]);
  });

  it('given two loops that read the same revision, when the loser decides again on the winner\'s claim, then it claims nothing', () => {
    const task = claimDecider.evolve(claimDecider.initialState(), due('scheduled'));
    const claimed = claimDecider.decide(claim(), task).reduce(claimDecider.evolve, task);
    expect(claimDecider.decide(claim(), claimed)).to.deep.equal([]);
  });
});

describe('scheduler claim release decider', () => {
  const given = deciderSpecification(releaseDecider);
  const claimed = [due('success'), ...queued('success')];
  const release = (previousState: string) => ({ previousState, revisionLaui: REVISION });

  it('given a claimed task, when its claim is released, then TaskClaimReleased back to the state it was claimed from', () => {
    for (const previous of ['scheduled', 'success', 'error', 'timeout']) {
      given(...claimed)
        .when(release(previous))
        .then([
          {
            type: 'TaskClaimReleased',
            data: { from: 'queued_for_connection', to: previous, trigger: 'claim_released', changes: { state: previous }, version: 4, revision_laui: null },
          },
        ]);
    }
  });

  it('given a claimed task, when released to a state the claim cannot have left, then 409 with the state table\'s detail', () => {
    for (const previous of ['running', 'cancelled', 'fail', 'created']) {
      given(...claimed).when(release(previous)).thenFails(409, refusedTransitionDetail('queued_for_connection', previous));
    }
  });

  it('given no task, a deleted one or a task no longer queued for its connection, when released, then nothing is recorded', () => {
    given().when(release('success')).then([]);
    given(...claimed, { type: 'ItemSoftDeleted', data: { at: AT } }).when(release('success')).then([]);
    given(due('success')).when(release('success')).then([]);
    given(due('running')).when(release('success')).then([]);
  });
});
