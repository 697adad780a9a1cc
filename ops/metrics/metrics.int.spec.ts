import { expect } from 'chai';
import { startTestService, type TestService } from '../../test/support/testService.ts';
import { catalogClient, createUser, waitForItem, type CatalogClient } from '../../test/support/catalogFixture.ts';
import { taskBed, type TaskBed } from '../../test/support/taskBed.ts';
import { parseExposition, type Exposition } from '../../test/support/prometheusText.ts';
import { recordedFetch } from '../../test/support/trafficRecorder.ts';
import { METRIC_FAMILIES } from './ServiceMetrics.ts';

const METRICS_TOKEN = 'metrics-token-of-the-spec';
const SAMPLE_LAUI = '0123456789abcdef01234567';

const JS_SUCCESS = `
export function run() { return { started: true }; }
export function check_completion() { return { status: 'success' }; }
`;

const PINNED = [
  ['orchestrator_task_runs_total', 'counter'],
  ['orchestrator_task_run_duration_seconds', 'histogram'],
  ['orchestrator_task_queue_wait_seconds', 'histogram'],
  ['orchestrator_worker_slots_busy', 'gauge'],
  ['orchestrator_http_request_duration_seconds', 'histogram'],
  ['orchestrator_event_store_append_duration_seconds', 'histogram'],
  ['orchestrator_projection_lag_events', 'gauge'],
] as const;

/** Retries `read` until `done` holds for what it read, or fails with the last reading. */
const eventually = async <T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 30_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not reached in ${timeoutMs} ms (last: ${JSON.stringify(value)})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe('Prometheus metrics: GET /metrics (embedded service, a real run)', function () {
  this.timeout(90_000);
  let svc: TestService;
  let admin: CatalogClient;
  let bed: TaskBed;
  let userToken: string;

  const scrape = async (token = METRICS_TOKEN): Promise<Exposition> => {
    const reply = await svc.client().get('/metrics', { token });
    expect(reply.status, reply.text).to.equal(200);
    return parseExposition(reply.text);
  };

  before(async () => {
    svc = await startTestService({ METRICS_TOKEN });
    admin = catalogClient(svc, (await svc.login()).token);
    userToken = (await createUser(svc, admin.token, 'metrics-reader')).token;
    bed = await taskBed(admin, 'metrics-co', { name: 'metrics-target', content: {}, max_parallelism: 2 });
  });
  after(async () => svc?.stop());

  describe('who may read them', () => {
    it('given no credentials, when /metrics is read, then 401 with the spec error body', async () => {
      const reply = await svc.client().get('/metrics');
      expect(reply.status).to.equal(401);
      expect(reply.json).to.deep.equal({ detail: 'User not authenticated' });
    });

    it('given a Bearer that is neither METRICS_TOKEN nor a valid access token, when /metrics is read, then 401', async () => {
      for (const token of [`${METRICS_TOKEN}x`, METRICS_TOKEN.slice(0, -1), 'not-a-token']) {
        const reply = await svc.client().get('/metrics', { token });
        expect(reply.status, token).to.equal(401);
        expect(reply.json).to.deep.equal({ detail: 'User not authenticated' });
      }
    });

    it("given a user who is not an administrator, when /metrics is read with that user's token, then 403 Access denied", async () => {
      const reply = await svc.client().get('/metrics', { token: userToken });
      expect(reply.status).to.equal(403);
      expect(reply.json).to.deep.equal({ detail: 'Access denied' });
    });

    it("given an administrator's access token or METRICS_TOKEN, when /metrics is read, then 200 in the Prometheus text format", async () => {
      for (const token of [admin.token, METRICS_TOKEN]) {
        const reply = await svc.client().get('/metrics', { token });
        expect(reply.status, reply.text).to.equal(200);
        expect(reply.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
        expect(reply.headers.get('cache-control')).to.equal('no-store');
        expect(() => parseExposition(reply.text)).to.not.throw();
      }
    });
  });

  describe('what they say', () => {
    it('given the service, when scraped, then every pinned family is there with its type, beside the default process and Node.js metrics', async () => {
      const metrics = await scrape();
      for (const [family, type] of PINNED) expect(metrics.types.get(family), family).to.equal(type);
      for (const family of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'process_start_time_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_version_info']) {
        expect(metrics.types.has(family), family).to.equal(true);
      }
      expect(metrics.value(METRIC_FAMILIES.workerSlotsCapacity)).to.equal(svc.config.workerConcurrency);
    });

    it('given a task run to success, when scraped, then runs_total{state="success"}, the run duration and the queue wait each count it, and no slot stays busy', async () => {
      const before = await scrape();
      const runsBefore = before.value('orchestrator_task_runs_total', { state: 'success' });
      expect(runsBefore).to.be.a('number');
      const durationsBefore = before.value('orchestrator_task_run_duration_seconds_count') ?? Number.NaN;
      const waitsBefore = before.value('orchestrator_task_queue_wait_seconds_count') ?? Number.NaN;
      const appendsBefore = before.value('orchestrator_event_store_append_duration_seconds_count') ?? Number.NaN;

      const operator = await admin.createOk({ item_type: 'operator', name: 'metrics.operator', parent_laui: bed.tree.folders.operator, codeblock: { language: 'javascript', code: JS_SUCCESS } });
      const reply = await svc.client().post('/api/v1/task/run', { json: { item_type: 'task', ...bed.taskBody('metrics-task', operator) }, token: admin.token });
      expect(reply.status, reply.text).to.equal(200);
      const laui = (reply.json as { item_laui: string }).item_laui;
      const task = await waitForItem<{ state: string }>(admin, laui, (item) => ['success', 'error', 'timeout', 'cancelled', 'fail'].includes(String(item.state)));
      expect(task.state).to.equal('success');

      // The worker counts the run once its end is recorded, which may be just after the state is readable.
      const after = await eventually(scrape, (metrics) => metrics.value('orchestrator_task_runs_total', { state: 'success' }) === Number(runsBefore) + 1, 'runs_total{state="success"} + 1');
      expect(after.value('orchestrator_task_runs_total', { state: 'error' })).to.equal(before.value('orchestrator_task_runs_total', { state: 'error' }));
      expect(after.value('orchestrator_task_run_duration_seconds_count')).to.equal(durationsBefore + 1);
      expect(after.value('orchestrator_task_run_duration_seconds_sum')).to.be.greaterThan(before.value('orchestrator_task_run_duration_seconds_sum') ?? Number.NaN);
      expect(after.value('orchestrator_task_queue_wait_seconds_count')).to.equal(waitsBefore + 1);
      expect(after.value('orchestrator_task_queue_wait_seconds_sum')).to.be.at.least(before.value('orchestrator_task_queue_wait_seconds_sum') ?? Number.NaN);
      expect(after.value('orchestrator_task_queue_wait_seconds_bucket', { le: '+Inf' })).to.equal(waitsBefore + 1);
      // The run's commits (dispatch, pick-up, end) went through the timed store.
      expect(after.value('orchestrator_event_store_append_duration_seconds_count')).to.be.at.least(appendsBefore + 3);
      const idle = await eventually(scrape, (metrics) => metrics.value('orchestrator_worker_slots_busy') === 0, 'no busy slot after the run');
      expect(idle.value('orchestrator_worker_slots_busy')).to.equal(0);
    });

    it('given requests to routes with path parameters and to no route, when scraped, then the route label is the template or "unmatched", never a raw path', async () => {
      const ready = await svc.client().get(`/api/v1/catalog/get/tasks_ready_to_run/${bed.tree.project_laui}`, { token: admin.token });
      expect(ready.status, ready.text).to.equal(200);
      expect((await svc.client().get(`/no/such/route/${SAMPLE_LAUI}`)).status).to.equal(404);
      const metrics = await scrape();
      const routes = metrics.samples.filter((sample) => sample.name === 'orchestrator_http_request_duration_seconds_count');
      const labelsOf = (route: string) => routes.filter((sample) => sample.labels.route === route).map((sample) => sample.labels);
      expect(labelsOf('/api/v1/catalog/get/tasks_ready_to_run/:project_laui')).to.deep.include({ method: 'GET', route: '/api/v1/catalog/get/tasks_ready_to_run/:project_laui', status: '200' });
      expect(labelsOf('/api/v1/task/run')).to.deep.include({ method: 'POST', route: '/api/v1/task/run', status: '200' });
      expect(labelsOf('/metrics')).to.deep.include({ method: 'GET', route: '/metrics', status: '401' });
      expect(labelsOf('unmatched')).to.deep.include({ method: 'GET', route: 'unmatched', status: '404' });
      for (const sample of routes) {
        expect(sample.labels.route, 'a raw path in a route label').to.not.include(bed.tree.project_laui);
        expect(sample.labels.route).to.not.include(SAMPLE_LAUI);
        expect(sample.labels.route === 'unmatched' || sample.labels.route?.startsWith('/'), sample.labels.route).to.equal(true);
      }
    });

    it('given the read models caught up with the log, when scraped, then the projection lag is 0 events', async () => {
      const metrics = await eventually(scrape, (scraped) => scraped.value('orchestrator_projection_lag_events') === 0, 'projection lag 0');
      expect(metrics.value('orchestrator_projection_lag_events')).to.equal(0);
    });
  });
});

describe('Prometheus metrics: METRICS_PORT (a loopback port of their own)', function () {
  this.timeout(90_000);

  it('given METRICS_PORT without METRICS_TOKEN, when read, then the API port answers 404 and the loopback port serves them without credentials', async () => {
    const svc = await startTestService({ METRICS_PORT: '0' });
    try {
      const { token } = await svc.login();
      expect((await svc.client().get('/metrics', { token })).status).to.equal(404);
      const url = svc.service.metricsUrl;
      expect(url).to.match(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const reply = await recordedFetch(String(url));
      expect(reply.status).to.equal(200);
      const metrics = parseExposition(await reply.text());
      for (const [family, type] of PINNED) expect(metrics.types.get(family), family).to.equal(type);
      // Only /metrics is served there (not recorded: the OpenAPI document describes the API port's paths).
      expect((await fetch(new URL('/api/v1/user/me', String(url)))).status).to.equal(404);
    } finally {
      await svc.stop();
    }
  });

  it('given METRICS_PORT and METRICS_TOKEN, when the loopback port is read, then it asks for the token (or an administrator) as the API port would', async () => {
    const svc = await startTestService({ METRICS_PORT: '0', METRICS_TOKEN });
    try {
      const url = String(svc.service.metricsUrl);
      const bare = await recordedFetch(url);
      expect(bare.status).to.equal(401);
      expect(await bare.json()).to.deep.equal({ detail: 'User not authenticated' });
      expect((await recordedFetch(url, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).status).to.equal(200);
      const { token } = await svc.login();
      expect((await recordedFetch(url, { headers: { authorization: `Bearer ${token}` } })).status).to.equal(200);
      expect((await svc.client().get('/metrics', { token: METRICS_TOKEN })).status).to.equal(404);
    } finally {
      await svc.stop();
    }
  });
});
