import { expect } from 'chai';
import { ServiceMetrics } from './ServiceMetrics.ts';
import { parseExposition } from '../../test/support/prometheusText.ts';

const metricsWith = (lag: () => Promise<number> = async () => 0) => {
  let busy = 0;
  const metrics = new ServiceMetrics({ slotsBusy: () => busy, slotsCapacity: () => 4, projectionLag: lag });
  return { metrics, setBusy: (value: number) => (busy = value) };
};

const family = async (metrics: ServiceMetrics, name: string) => parseExposition(await metrics.registry.getSingleMetricAsString(name));

describe('ServiceMetrics', () => {
  it('given two instances, when one counts a run, then the other does not see it (a registry each, not the global one)', async () => {
    const first = metricsWith().metrics;
    const second = metricsWith().metrics;
    first.ended('success', 2);
    expect((await family(first, 'orchestrator_task_runs_total')).value('orchestrator_task_runs_total', { state: 'success' })).to.equal(1);
    expect((await family(second, 'orchestrator_task_runs_total')).value('orchestrator_task_runs_total', { state: 'success' })).to.equal(0);
  });

  it('given run ends of each terminal state and one unknown, when counted, then each state has its series and the unknown one is `other`', async () => {
    const { metrics } = metricsWith();
    for (const state of ['success', 'error', 'error', 'timeout', 'cancelled', 'fail', 'weird']) metrics.ended(state, 1.5);
    const runs = await family(metrics, 'orchestrator_task_runs_total');
    expect(['success', 'error', 'timeout', 'cancelled', 'fail', 'other'].map((state) => runs.value('orchestrator_task_runs_total', { state }))).to.deep.equal([1, 2, 1, 1, 1, 1]);
    const durations = await family(metrics, 'orchestrator_task_run_duration_seconds');
    expect(durations.value('orchestrator_task_run_duration_seconds_count')).to.equal(7);
    expect(durations.value('orchestrator_task_run_duration_seconds_sum')).to.equal(10.5);
  });

  it('given a run the lease reaper ended, when counted, then it is an error run with no run time', async () => {
    const { metrics } = metricsWith();
    metrics.abandoned('error');
    expect((await family(metrics, 'orchestrator_task_runs_total')).value('orchestrator_task_runs_total', { state: 'error' })).to.equal(1);
    expect((await family(metrics, 'orchestrator_task_run_duration_seconds')).value('orchestrator_task_run_duration_seconds_count')).to.equal(0);
  });

  it('given the gauges, when scraped, then they read the slots and the lag at that moment; a failed lag read keeps the last figure', async () => {
    let fail = false;
    let lag = 7;
    const { metrics, setBusy } = metricsWith(async () => {
      if (fail) throw new Error('store closed');
      return lag;
    });
    setBusy(3);
    expect((await family(metrics, 'orchestrator_worker_slots_busy')).value('orchestrator_worker_slots_busy')).to.equal(3);
    expect((await family(metrics, 'orchestrator_worker_slots_capacity')).value('orchestrator_worker_slots_capacity')).to.equal(4);
    expect((await family(metrics, 'orchestrator_projection_lag_events')).value('orchestrator_projection_lag_events')).to.equal(7);
    fail = true;
    lag = 99;
    expect((await family(metrics, 'orchestrator_projection_lag_events')).value('orchestrator_projection_lag_events')).to.equal(7);
  });

  it('given requests, when observed, then they are counted by method, route template and status', async () => {
    const { metrics } = metricsWith();
    metrics.observeRequest({ method: 'POST', route: '/api/v1/task/update/:task_laui', status: 200, seconds: 0.02 });
    metrics.observeRequest({ method: 'POST', route: '/api/v1/task/update/:task_laui', status: 200, seconds: 0.03 });
    const http = await family(metrics, 'orchestrator_http_request_duration_seconds');
    expect(http.value('orchestrator_http_request_duration_seconds_count', { method: 'POST', route: '/api/v1/task/update/:task_laui', status: '200' })).to.equal(2);
  });
});
