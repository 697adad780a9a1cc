import { expect } from 'chai';
import { deciderSpecification } from '../../test/support/deciderSpecification.ts';
import type { BackfillEvent } from '../../shared/task/backfill/backfillEvents.ts';
import { backfillProgress } from '../../shared/task/backfill/backfillState.ts';
import { backfillDecider, type BackfillCommand } from './backfillDecider.ts';

const given = deciderSpecification(backfillDecider);

const ID = '65a0c0ffee0000000000b001';
const OTHER = '65a0c0ffee0000000000b002';
const TASK = '65a0c0ffee0000000000ta5c';
const LANE = '65a0c0ffee0000000000ta51';
const LANE2 = '65a0c0ffee0000000000ta52';
const AT = '2026-01-10T00:00:00.000Z';
const DAYS = ['2024-01-01T00:00:00.000Z', '2024-01-02T00:00:00.000Z', '2024-01-03T00:00:00.000Z'];

const request = (change: Partial<Extract<BackfillCommand, { kind: 'request' }>> = {}): BackfillCommand => ({
  kind: 'request',
  backfillId: ID,
  taskLaui: TASK,
  projectLaui: null,
  frequency: '0 3 * * *',
  startDate: new Date('2024-01-01T00:00:00Z'),
  endDate: new Date('2024-01-03T12:00:00Z'),
  maxActiveRuns: 1,
  taskRevision: 4,
  requestedBy: null,
  at: AT,
  ...change,
});

const requested = (id = ID, maxActiveRuns = 1): BackfillEvent => ({
  type: 'BackfillRequested',
  data: {
    backfill_id: id,
    task_laui: TASK,
    project_laui: null,
    frequency: '0 3 * * *',
    start_date: '2024-01-01T00:00:00.000Z',
    end_date: '2024-01-03T12:00:00.000Z',
    max_active_runs: maxActiveRuns,
    logical_dates: DAYS,
    task_revision: 4,
    requested_by: null,
    at: AT,
  },
});
const started = (day: string, id = ID, runner = TASK): BackfillEvent => ({
  type: 'BackfillRunStarted',
  data: { backfill_id: id, logical_date: day, ...(runner === TASK ? {} : { run_task_laui: runner }), at: AT },
});
const laneOpened = (lane: number, laui: string): BackfillEvent => ({ type: 'BackfillLaneOpened', data: { backfill_id: ID, lane, task_laui: laui, at: AT } });
const openLane = (lane: number, laui: string): BackfillCommand => ({ kind: 'openLane', backfillId: ID, lane, laneLaui: laui, at: AT });
const ended = (day: string, state = 'success', id = ID): BackfillEvent => ({ type: 'BackfillRunEnded', data: { backfill_id: id, logical_date: day, state, session_id: null, detail: null, at: AT } });
const cancelled = (id = ID): BackfillEvent => ({ type: 'BackfillCancelled', data: { backfill_id: id, by: null, reason: null, at: AT } });
const start = (day: string, runner = TASK): BackfillCommand => ({ kind: 'startRun', backfillId: ID, logicalDate: day, runTaskLaui: runner, at: AT });
const end = (day: string, state = 'success'): BackfillCommand => ({ kind: 'endRun', backfillId: ID, logicalDate: day, state, sessionId: null, detail: null, at: AT });
const cancel: BackfillCommand = { kind: 'cancel', backfillId: ID, by: null, reason: null, at: AT };

describe('backfill decider (given events / when command / then events)', () => {
  describe('request', () => {
    it('given no backfill, when requested over three days, then BackfillRequested with one logical date per cron step, oldest first, both ends included', () =>
      given().when(request()).then([requested()]));

    it('given the same backfill already requested, when requested again (a retried append), then nothing', () => given(requested()).when(request()).then([]));

    it('given a backfill of the task not completed, when another is requested, then 409 naming it', () =>
      given(requested(OTHER)).when(request()).thenFails(409, `Backfill ${OTHER} of task ${TASK} is still running: cancel it or wait until it completes`));

    it('given a completed backfill of the task, when another is requested, then it is taken', () =>
      given(requested(OTHER), { type: 'BackfillCompleted', data: { backfill_id: OTHER, succeeded: 0, failed: 0, not_run: 3, at: AT } }).when(request()).then([requested()]));

    const refusals: Array<[string, Partial<Extract<BackfillCommand, { kind: 'request' }>>, string]> = [
      ['an ADHOC task', { frequency: 'ADHOC' }, `Backfill needs a scheduled task: task ${TASK} has frequency ADHOC`],
      ['start_date after end_date', { startDate: new Date('2024-01-04T00:00:00Z') }, 'start_date must be earlier than or equal to end_date'],
      ['max_active_runs 0', { maxActiveRuns: 0 }, 'max_active_runs must be an integer from 1 to 32'],
      ['max_active_runs 33', { maxActiveRuns: 33 }, 'max_active_runs must be an integer from 1 to 32'],
      ['max_active_runs 1.5', { maxActiveRuns: 1.5 }, 'max_active_runs must be an integer from 1 to 32'],
      ['more than 1000 steps', { frequency: '* * * * *' }, 'Too many runs: a backfill runs at most 1000 cron steps; split the range'],
      ['no step in the range (Mondays, from a Tuesday to a Wednesday)', { frequency: '0 3 * * 1', startDate: new Date('2024-01-02T00:00:00Z'), endDate: new Date('2024-01-03T00:00:00Z') }, 'No cron step of 0 3 * * 1 between start_date and end_date'],
    ];
    for (const [what, change, detail] of refusals) {
      it(`given no backfill, when requested with ${what}, then 400 "${detail}"`, () => given().when(request(change)).thenFails(400, detail));
    }
  });

  describe('startRun', () => {
    it('given a requested backfill, when its oldest step is started, then BackfillRunStarted', () => given(requested()).when(start(DAYS[0] as string)).then([started(DAYS[0] as string)]));
    it('given a requested backfill, when a later step is started first, then nothing (oldest first)', () => given(requested()).when(start(DAYS[1] as string)).then([]));
    it('given max_active_runs runs in flight, when the next is started, then nothing', () =>
      given(requested(ID, 1), started(DAYS[0] as string)).when(start(DAYS[1] as string)).then([]));
    it('given max_active_runs 2, one run in flight on the task and a lane, when the next is started on the lane, then BackfillRunStarted naming the lane', () =>
      given(requested(ID, 2), laneOpened(1, LANE), started(DAYS[0] as string)).when(start(DAYS[1] as string, LANE)).then([started(DAYS[1] as string, ID, LANE)]));
    it('given max_active_runs 2 and one run in flight on the task, when the next is started on the task too, then nothing (a runner holds one run)', () =>
      given(requested(ID, 2), laneOpened(1, LANE), started(DAYS[0] as string)).when(start(DAYS[1] as string)).then([]));
    it('given a runner that is no lane of the backfill, when a step is started on it, then nothing', () =>
      given(requested(ID, 2), started(DAYS[0] as string)).when(start(DAYS[1] as string, LANE2)).then([]));
    it('given a lane whose run ended, when the next step is started on it, then BackfillRunStarted naming it', () =>
      given(requested(ID, 2), laneOpened(1, LANE), started(DAYS[0] as string), started(DAYS[1] as string, ID, LANE), ended(DAYS[1] as string))
        .when(start(DAYS[2] as string, LANE))
        .then([started(DAYS[2] as string, ID, LANE)]));
    it('given a cancelled backfill, when a step is started, then nothing', () => given(requested(), started(DAYS[0] as string), cancelled()).when(start(DAYS[1] as string)).then([]));
    it('given an unknown backfill, when a step is started, then nothing', () => given().when(start(DAYS[0] as string)).then([]));
  });

  describe('openLane', () => {
    it('given max_active_runs 3, when lane 1 is opened, then BackfillLaneOpened', () => given(requested(ID, 3)).when(openLane(1, LANE)).then([laneOpened(1, LANE)]));
    it('given lane 1 opened, when lane 2 is opened, then BackfillLaneOpened', () => given(requested(ID, 3), laneOpened(1, LANE)).when(openLane(2, LANE2)).then([laneOpened(2, LANE2)]));
    it('given lane 1 opened, when lane 1 is opened again (a second driver), then nothing', () => given(requested(ID, 3), laneOpened(1, LANE)).when(openLane(1, LANE2)).then([]));
    it('given max_active_runs 2 and lane 1 opened, when lane 2 is opened, then nothing (the task and one lane are two runners)', () =>
      given(requested(ID, 2), laneOpened(1, LANE)).when(openLane(2, LANE2)).then([]));
    it('given max_active_runs 1, when a lane is opened, then nothing', () => given(requested(ID, 1)).when(openLane(1, LANE)).then([]));
    it('given a cancelled backfill, when a lane is opened, then nothing', () => given(requested(ID, 3), cancelled()).when(openLane(1, LANE)).then([]));
  });

  describe('endRun', () => {
    it('given a run in flight, when it ends, then BackfillRunEnded', () =>
      given(requested(), started(DAYS[0] as string)).when(end(DAYS[0] as string, 'error')).then([ended(DAYS[0] as string, 'error')]));
    it('given a step not in flight, when it ends (a replayed pass), then nothing', () => given(requested()).when(end(DAYS[0] as string)).then([]));
    it('given the last run in flight, when it ends, then BackfillRunEnded and BackfillCompleted with the counts', () =>
      given(requested(), started(DAYS[0] as string), ended(DAYS[0] as string), started(DAYS[1] as string), ended(DAYS[1] as string, 'timeout'), started(DAYS[2] as string))
        .when(end(DAYS[2] as string))
        .then([ended(DAYS[2] as string), { type: 'BackfillCompleted', data: { backfill_id: ID, succeeded: 2, failed: 1, not_run: 0, at: AT } }]));
    it('given a cancelled backfill with a run in flight, when it ends, then BackfillRunEnded and BackfillCompleted (the rest not run)', () =>
      given(requested(), started(DAYS[0] as string), cancelled())
        .when(end(DAYS[0] as string))
        .then([ended(DAYS[0] as string), { type: 'BackfillCompleted', data: { backfill_id: ID, succeeded: 1, failed: 0, not_run: 2, at: AT } }]));
  });

  describe('cancel', () => {
    it('given a run in flight, when cancelled, then BackfillCancelled only (it completes when the run ends)', () =>
      given(requested(), started(DAYS[0] as string)).when(cancel).then([cancelled()]));
    it('given no run in flight, when cancelled, then BackfillCancelled and BackfillCompleted', () =>
      given(requested()).when(cancel).then([cancelled(), { type: 'BackfillCompleted', data: { backfill_id: ID, succeeded: 0, failed: 0, not_run: 3, at: AT } }]));
    it('given a cancelled backfill, when cancelled again, then nothing', () => given(requested(), started(DAYS[0] as string), cancelled()).when(cancel).then([]));
    it('given a completed backfill, when cancelled, then 409', () =>
      given(requested(), cancelled(), { type: 'BackfillCompleted', data: { backfill_id: ID, succeeded: 0, failed: 0, not_run: 3, at: AT } })
        .when(cancel)
        .thenFails(409, `Backfill ${ID} has already completed`));
    it('given an unknown backfill, when cancelled, then 404', () => given(requested(OTHER)).when(cancel).thenFails(404, 'Backfill not found'));
  });

  it('given a backfill part way, when its progress is read, then the counts and each run with its data interval', () => {
    const state = [requested(), started(DAYS[0] as string), ended(DAYS[0] as string), started(DAYS[1] as string)].reduce(backfillDecider.evolve, backfillDecider.initialState());
    const progress = backfillProgress(state.backfills[ID] as NonNullable<(typeof state.backfills)[string]>);
    expect(progress).to.include({ status: 'running', total: 3, done: 1, failed: 0, running: 1, pending: 1 });
    expect(progress.runs.map((run) => [run.state, run.data_interval_start, run.data_interval_end])).to.deep.equal([
      ['success', DAYS[0], DAYS[1]],
      ['running', DAYS[1], DAYS[2]],
      ['pending', DAYS[2], '2024-01-04T00:00:00.000Z'],
    ]);
  });
});
