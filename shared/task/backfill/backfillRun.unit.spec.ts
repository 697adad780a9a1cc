import { expect } from 'chai';
import { decideRun } from '../runLifecycle.ts';
import type { TaskRecord } from '../taskFields.ts';
import { schedulerDue } from '../readyToRun.ts';
import { backfillMarkAfter, backfillOfChange, NO_BACKFILL, scheduleStateOf } from './backfillRun.ts';

const NOW = new Date('2026-01-10T12:00:00Z');
const SCHEDULE = { logical_date: '2026-01-10T00:00:00.000Z', next_run_date: '2026-01-11T03:00:00.000Z', retry_number: 0, prev_interval_start: '2026-01-09T00:00:00.000Z', prev_interval_end: '2026-01-10T00:00:00.000Z' };
const task = (fields: Record<string, unknown> = {}): TaskRecord & Record<string, unknown> => ({
  item_type: 'task',
  frequency: '0 3 * * *',
  start_date: '2026-01-01T00:00:00.000Z',
  end_date: '2026-12-31T00:00:00.000Z',
  state: 'success',
  ...SCHEDULE,
  ...fields,
});
const requestRun = (fields: Record<string, unknown>, backfillId?: string) =>
  decideRun(task(fields), { trigger: 'RunRequested', origin: 'user', at: NOW, logicalDate: '2024-01-01T00:00:00.000Z', totalRetries: 0, retryInterval: 1, runBy: null, ...(backfillId ? { backfillId } : {}) });
const changesOf = (decision: ReturnType<typeof decideRun>): Record<string, unknown> => decision.events[0]?.data.changes ?? {};

describe("a backfill's run on the task lifecycle (runChanges through withBackfillRun)", () => {
  it("given a scheduled task, when a backfill's run is requested, then its logical date is the step's and the schedule is kept aside", () => {
    const changes = changesOf(requestRun({}, 'b1'));
    expect(changes).to.include({ state: 'queued_for_connection', logical_date: '2024-01-01T00:00:00.000Z', backfill_id: 'b1', backfill_schedule_state: 'success' });
    expect(changes.backfill_resume).to.deep.equal(SCHEDULE);
  });

  for (const [trigger, to] of [['Succeeded', 'success'], ['Errored', 'error'], ['TimedOut', 'timeout'], ['Reaped', 'error']] as const) {
    it(`given a backfill's run in flight, when it ends (${trigger}), then the state is ${to} but the schedule comes back unmoved and no next run is due`, () => {
      const running = task({ state: 'running', logical_date: '2024-01-01T00:00:00.000Z', data_interval_start: '2024-01-01T00:00:00.000Z', backfill_id: 'b1', backfill_resume: SCHEDULE, backfill_schedule_state: 'success', next_run_date: SCHEDULE.next_run_date });
      const decision = decideRun(running, { trigger, at: NOW });
      expect(changesOf(decision)).to.deep.include({ state: to, ...SCHEDULE, backfill_resume: null });
      expect(decision.effects.map((effect) => effect.type)).not.to.include('DispatchNextRun');
    });
  }

  it("given a task whose last run was a backfill's that failed, when the scheduler looks, then it sees the schedule's state: due on its next_run_date, not a retry", () => {
    const after = task({ state: 'error', retry_number: 0, total_retries: 3, last_run_date: '2026-01-01T00:00:00.000Z', backfill_id: 'b1', backfill_resume: null, backfill_schedule_state: 'success', next_run_date: '2026-01-10T03:00:00.000Z' });
    expect(scheduleStateOf(after)).to.equal('success');
    expect(schedulerDue(after, NOW)).to.deep.equal({ ready: true, path: 'scheduled' });
    expect(scheduleStateOf(task({ state: 'error', backfill_id: 'b1', backfill_resume: SCHEDULE, backfill_schedule_state: 'success' }))).to.equal('error');
  });

  it("given a task after a backfill's run, when the cron claims it, then the backfill fields are cleared", () => {
    const after = task({ backfill_id: 'b1', backfill_resume: null, backfill_schedule_state: 'success' });
    expect(changesOf(decideRun(after, { trigger: 'Claimed', at: NOW }))).to.include({ backfill_id: null, backfill_resume: null, backfill_schedule_state: null });
    expect(changesOf(requestRun({ backfill_id: 'b1', backfill_resume: null }))).to.include({ backfill_id: null });
  });

  it("given a second step of the same backfill, when requested, then the schedule's state is the one kept aside, not the last step's outcome", () => {
    const changes = changesOf(requestRun({ state: 'error', backfill_id: 'b1', backfill_resume: null, backfill_schedule_state: 'scheduled' }, 'b1'));
    expect(changes).to.include({ backfill_schedule_state: 'scheduled' });
  });

  it('given the marks of a run, when changes come, then only the events from the request to the end name the backfill', () => {
    const queued = { backfill_id: 'b1', backfill_resume: SCHEDULE };
    expect(backfillOfChange(NO_BACKFILL, queued)).to.equal('b1');
    const inRun = backfillMarkAfter(queued, NO_BACKFILL);
    expect(backfillOfChange(inRun, { state: 'running' })).to.equal('b1');
    expect(backfillOfChange(inRun, { state: 'success', backfill_resume: null })).to.equal('b1');
    const ended = backfillMarkAfter({ backfill_resume: null }, inRun);
    expect(backfillOfChange(ended, { state: 'scheduled' })).to.equal(null);
    expect(backfillOfChange(ended, { backfill_resume: SCHEDULE })).to.equal('b1');
  });
});
