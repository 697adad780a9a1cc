import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RunObserver } from '../../shared/ports/RunObserver.ts';

/**
 * The service's own families (names pinned by issue 35; docs/grafana-dashboard.json and the README
 * name them). The default process_* and nodejs_* families come beside them.
 */
export const METRIC_FAMILIES = {
  taskRuns: 'orchestrator_task_runs_total',
  taskRunDuration: 'orchestrator_task_run_duration_seconds',
  taskQueueWait: 'orchestrator_task_queue_wait_seconds',
  workerSlotsBusy: 'orchestrator_worker_slots_busy',
  workerSlotsCapacity: 'orchestrator_worker_slots_capacity',
  httpRequestDuration: 'orchestrator_http_request_duration_seconds',
  eventStoreAppendDuration: 'orchestrator_event_store_append_duration_seconds',
  projectionLag: 'orchestrator_projection_lag_events',
} as const;

/** The states a run ends in (the worker's terminal changes); anything else is counted as `other`. */
export const RUN_END_STATES = ['success', 'error', 'timeout', 'cancelled', 'fail'] as const;

/** The route label of a request no router matched: raw paths carry LAUIs and would grow the series without bound. */
export const UNMATCHED_ROUTE = 'unmatched';

export interface RequestObservation {
  method: string;
  /** The matched route's template (`/api/v1/task/update/:task_laui`), never the raw path. */
  route: string;
  status: number;
  seconds: number;
}

/** What the gauges read when scraped: this process's worker slots, and how far its read models trail the log. */
export interface MetricsSources {
  slotsBusy(): number;
  slotsCapacity(): number;
  /** Events in the log not yet applied by the read models this process reads (the projector's, in a role that does not project). */
  projectionLag(): Promise<number>;
}

// Buckets in seconds. A run lasts from a second to hours (WORKER_TIMEOUT_SECONDS, 6 h by default).
const RUN_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600];
// Request to pick-up: milliseconds when a slot is free, up to hours behind a busy connection.
const WAIT_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120];
// A commit of the embedded store is a fraction of a millisecond to a few (fsync); KurrentDB adds a round trip.
const APPEND_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * One service instance's Prometheus registry and instruments. A registry of its own, never
 * prom-client's global one: tests start several services in one process, and each process role
 * serves only its own figures. The default process and Node.js metrics are collected into it once,
 * here.
 */
export class ServiceMetrics implements RunObserver {
  readonly registry = new Registry();
  private readonly runs: Counter<'state'>;
  private readonly runDuration: Histogram;
  private readonly queueWait: Histogram;
  private readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  private readonly appendDuration: Histogram;

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.runs = new Counter({ name: METRIC_FAMILIES.taskRuns, help: 'Task runs ended by this process (its worker, or its lease reaper), by terminal state', labelNames: ['state'], registers });
    // Every state from zero: rate() and increase() see a run of a state that had none before.
    for (const state of RUN_END_STATES) this.runs.inc({ state }, 0);
    this.runDuration = new Histogram({ name: METRIC_FAMILIES.taskRunDuration, help: 'Run time of the task runs this worker ended, pick-up to end', buckets: RUN_BUCKETS, registers });
    this.queueWait = new Histogram({ name: METRIC_FAMILIES.taskQueueWait, help: 'Wait of a task run from its request (queued_for_connection) to its pick-up by this worker', buckets: WAIT_BUCKETS, registers });
    new Gauge({
      name: METRIC_FAMILIES.workerSlotsBusy,
      help: "Runs holding one of this process's worker slots (WORKER_CONCURRENCY)",
      registers,
      collect() {
        this.set(sources.slotsBusy());
      },
    });
    new Gauge({
      name: METRIC_FAMILIES.workerSlotsCapacity,
      help: "This process's worker slots (WORKER_CONCURRENCY; 0 in a role without a worker)",
      registers,
      collect() {
        this.set(sources.slotsCapacity());
      },
    });
    this.httpDuration = new Histogram({
      name: METRIC_FAMILIES.httpRequestDuration,
      help: 'HTTP requests by method, route template and status',
      labelNames: ['method', 'route', 'status'],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.appendDuration = new Histogram({ name: METRIC_FAMILIES.eventStoreAppendDuration, help: 'Appends to the event store (one commit each, any number of streams)', buckets: APPEND_BUCKETS, registers });
    new Gauge({
      name: METRIC_FAMILIES.projectionLag,
      help: 'Events in the log that the read models this process reads have not applied yet',
      registers,
      async collect() {
        // A failed read (the store closing, a failover) keeps the last figure: a scrape never fails for it.
        const lag = await sources.projectionLag().catch(() => null);
        if (lag !== null) this.set(lag);
      },
    });
  }

  pickedUp(waitSeconds: number): void {
    this.queueWait.observe(waitSeconds);
  }

  ended(state: string, runSeconds: number): void {
    this.abandoned(state);
    this.runDuration.observe(runSeconds);
  }

  abandoned(state: string): void {
    this.runs.inc({ state: (RUN_END_STATES as ReadonlyArray<string>).includes(state) ? state : 'other' });
  }

  observeRequest(request: RequestObservation): void {
    this.httpDuration.observe({ method: request.method, route: request.route, status: String(request.status) }, request.seconds);
  }

  observeAppend(seconds: number): void {
    this.appendDuration.observe(seconds);
  }

  /**
   * Every series name a scrape can hold (a histogram's _bucket, _sum and _count), read from the
   * registry without collecting: what a dashboard's queries may name.
   */
  seriesNames(): Set<string> {
    return new Set(
      this.registry
        .getMetricsAsArray()
        .flatMap((metric) => (String(metric.type) === 'histogram' ? ['_bucket', '_sum', '_count'].map((suffix) => `${metric.name}${suffix}`) : [metric.name])),
    );
  }

  /** The exposition text (Prometheus text format 0.0.4) and its content type. */
  async exposition(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}
