import { expect } from 'chai';
import { advanceLogicalDate, nextCronDate } from '../../shared/task/cron.ts';
import { catchUpChanges, DEFAULT_MAX_CATCHUP_RUNS, initialScheduleChanges, maxCatchupRuns } from '../../shared/task/scheduleChanges.ts';

const daily = '0 0 * * *';
const d = (iso: string) => new Date(iso);

describe('scheduler schedule changes (initial next_run_date, catch-up bound)', () => {
  describe('initialScheduleChanges', () => {
    it('given a daily task starting mid-day, when first seen, then next_run_date is the next midnight and logical_date the start day', () => {
      expect(initialScheduleChanges({ frequency: daily, start_date: '2024-06-03T01:00:00.000Z' })).to.deep.equal({
        next_run_date: '2024-06-04T00:00:00.000Z',
        logical_date: '2024-06-03T00:00:00.000Z',
      });
    });

    it('given a task starting on a fire, when first seen, then both dates are the start', () => {
      expect(initialScheduleChanges({ frequency: daily, start_date: '2024-06-03T00:00:00.000Z' })).to.deep.equal({
        next_run_date: '2024-06-03T00:00:00.000Z',
        logical_date: '2024-06-03T00:00:00.000Z',
      });
    });

    it('given ADHOC, a task already scheduled, no start_date or a bad cron, when seen, then nothing changes', () => {
      expect(initialScheduleChanges({ frequency: 'ADHOC', start_date: '2024-06-03T00:00:00Z' })).to.equal(null);
      expect(initialScheduleChanges({ frequency: daily, start_date: '2024-06-03T00:00:00Z', next_run_date: '2024-06-05T00:00:00Z', logical_date: '2024-06-04T00:00:00Z' })).to.equal(null);
      expect(initialScheduleChanges({ frequency: daily })).to.equal(null);
      expect(initialScheduleChanges({ frequency: '* * *', start_date: '2024-06-03T00:00:00Z' })).to.equal(null);
    });

    it('given only logical_date missing, when seen, then only logical_date is set', () => {
      expect(initialScheduleChanges({ frequency: daily, start_date: '2024-06-03T05:00:00Z', next_run_date: '2024-06-04T00:00:00Z' })).to.deep.equal({
        logical_date: '2024-06-03T00:00:00.000Z',
      });
    });
  });

  describe('0 0 31 * * (months without a 31st are skipped), all in UTC', () => {
    it('given a start in mid-January, when advanced, then next_run_date visits only the 31sts and logical_date their months', () => {
      const initial = initialScheduleChanges({ frequency: '0 0 31 * *', start_date: '2024-01-15T10:00:00Z' });
      expect(initial).to.deep.equal({ next_run_date: '2024-01-31T00:00:00.000Z', logical_date: '2024-01-01T00:00:00.000Z' });
      const runs: string[] = [];
      const logicals: string[] = [];
      let next = d('2024-01-31T00:00:00Z');
      let logical = d('2024-01-01T00:00:00Z');
      for (let step = 0; step < 7; step += 1) {
        runs.push(next.toISOString().slice(0, 10));
        logicals.push(logical.toISOString().slice(0, 10));
        next = nextCronDate('0 0 31 * *', next);
        logical = advanceLogicalDate(logical, '0 0 31 * *');
      }
      expect(runs).to.deep.equal(['2024-01-31', '2024-03-31', '2024-05-31', '2024-07-31', '2024-08-31', '2024-10-31', '2024-12-31']);
      expect(logicals).to.deep.equal(['2024-01-01', '2024-03-01', '2024-05-01', '2024-07-01', '2024-08-01', '2024-10-01', '2024-12-01']);
    });

    it('given a start exactly at 31 December 00:00 UTC, when initialised, then that fire is the first run (no local-time shift)', () => {
      expect(initialScheduleChanges({ frequency: '0 0 31 * *', start_date: '2023-12-31T00:00:00Z' })).to.deep.equal({
        next_run_date: '2023-12-31T00:00:00.000Z',
        logical_date: '2023-12-01T00:00:00.000Z',
      });
    });
  });

  describe('catchUpChanges', () => {
    const now = d('2024-06-10T12:00:00Z');

    it('given seven due daily runs, when checked, then nothing is skipped', () => {
      expect(catchUpChanges({ frequency: daily, next_run_date: '2024-06-04T00:00:00Z', logical_date: '2024-06-03T00:00:00Z' }, now)).to.equal(null);
    });

    it('given 300 due daily runs and the default bound, when checked, then both dates skip ahead to the latest due run, keeping their one-step offset', () => {
      const plan = catchUpChanges({ frequency: daily, next_run_date: '2023-08-16T00:00:00Z', logical_date: '2023-08-15T00:00:00Z' }, now);
      expect(plan?.changes).to.deep.equal({ next_run_date: '2024-06-10T00:00:00.000Z', logical_date: '2024-06-09T00:00:00.000Z' });
      expect(plan?.skipped).to.equal(299);
    });

    it('given dates without offset, when skipped ahead, then logical_date equals the latest fire', () => {
      const plan = catchUpChanges({ frequency: daily, next_run_date: '2023-08-15T00:00:00Z', logical_date: '2023-08-15T00:00:00Z' }, now);
      expect(plan?.changes).to.deep.equal({ next_run_date: '2024-06-10T00:00:00.000Z', logical_date: '2024-06-10T00:00:00.000Z' });
    });

    it('given max_catchup_runs on the task, when checked, then it is the bound (0 and 1 keep only the latest run)', () => {
      const task = { frequency: daily, next_run_date: '2024-06-04T00:00:00Z', logical_date: '2024-06-03T00:00:00Z' };
      expect(catchUpChanges({ ...task, max_catchup_runs: 7 }, now)).to.equal(null);
      expect(catchUpChanges({ ...task, max_catchup_runs: 3 }, now)?.changes.next_run_date).to.equal('2024-06-10T00:00:00.000Z');
      expect(catchUpChanges({ ...task, max_catchup_runs: 0 }, now)?.skipped).to.equal(6);
      expect(catchUpChanges({ ...task, next_run_date: '2024-06-10T00:00:00Z', max_catchup_runs: 0 }, now)).to.equal(null);
    });

    it('given an end_date in the past, when skipped ahead, then the latest run is the last one not after end_date', () => {
      const plan = catchUpChanges(
        { frequency: daily, next_run_date: '2023-01-02T00:00:00Z', logical_date: '2023-01-01T00:00:00Z', end_date: '2023-12-31T12:00:00Z' },
        now,
      );
      expect(plan?.changes).to.deep.equal({ next_run_date: '2023-12-31T00:00:00.000Z', logical_date: '2023-12-30T00:00:00.000Z' });
    });

    it('given a monthly 31st schedule two years behind, when skipped ahead, then it lands on the latest 31st', () => {
      const plan = catchUpChanges({ frequency: '0 0 31 * *', next_run_date: '2022-01-31T00:00:00Z', logical_date: '2022-01-01T00:00:00Z', max_catchup_runs: 5 }, now);
      expect(plan?.changes).to.deep.equal({ next_run_date: '2024-05-31T00:00:00.000Z', logical_date: '2024-05-01T00:00:00.000Z' });
    });

    it('given runs on either side of the bound where the gap alone cannot decide, when checked, then they are counted exactly', () => {
      // Every 10 minutes, off the granularity step (a minute): 5 runs due (10:20 .. 11:00) vs bounds 5 and 4.
      const task = { frequency: '*/10 * * * *', next_run_date: '2024-06-10T10:20:00Z', logical_date: '2024-06-10T10:10:00Z' };
      const at = d('2024-06-10T11:05:00Z');
      expect(catchUpChanges({ ...task, max_catchup_runs: 5 }, at)).to.equal(null);
      expect(catchUpChanges({ ...task, max_catchup_runs: 4 }, at)?.changes).to.deep.equal({ next_run_date: '2024-06-10T11:00:00.000Z', logical_date: '2024-06-10T10:50:00.000Z' });
      // Hourly, one run more than the bound: the gap is too long for the shortcut, the count skips ahead.
      const hourly = { frequency: '0 * * * *', next_run_date: '2024-06-10T09:00:00Z', logical_date: '2024-06-10T08:00:00Z', max_catchup_runs: 3 };
      expect(catchUpChanges(hourly, now)?.changes).to.deep.equal({ next_run_date: '2024-06-10T12:00:00.000Z', logical_date: '2024-06-10T11:00:00.000Z' });
      expect(catchUpChanges({ ...hourly, max_catchup_runs: 4 }, now)).to.equal(null);
    });

    it('given an invalid frequency with a due next_run_date, when checked, then nothing is skipped (validation reports it) instead of throwing', () => {
      expect(catchUpChanges({ frequency: '61 * * * *', next_run_date: '2023-08-16T00:00:00Z', logical_date: '2023-08-15T00:00:00Z' }, now)).to.equal(null);
    });

    it('given a bad max_catchup_runs, when read, then the default applies', () => {
      expect(maxCatchupRuns({ max_catchup_runs: -1 })).to.equal(DEFAULT_MAX_CATCHUP_RUNS);
      expect(maxCatchupRuns({ max_catchup_runs: '5' })).to.equal(DEFAULT_MAX_CATCHUP_RUNS);
      expect(maxCatchupRuns({})).to.equal(100);
    });
  });
});
