import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import type { EventStore } from '../shared/event-store/EventStore.ts';
import type { ReadStore } from '../shared/read-store/ReadStore.ts';
import type { MessageBus } from '../shared/bus/MessageBus.ts';
import type { AppState } from '../shared/http/AppState.ts';
import type { ProjectionRunner } from '../projections/runner/ProjectionRunner.ts';
import type { ReadModelProgress } from '../shared/read-store/ReadModelProgress.ts';
import type { AiModule } from '../shared/ports/AiModule.ts';
import type { LogStreams } from '../query-side/logs/LogStreams.ts';
import type { Config } from './config.ts';
import type { JsonLinesLogger } from './logging/JsonLinesLogger.ts';
import type { ActiveRun } from './worker/ProcessCodeRunner.ts';
import type { ReadModelSnapshots } from './snapshots/ReadModelSnapshots.ts';
import type { ServiceMetrics } from './metrics/ServiceMetrics.ts';
import { createApp } from './http/createApp.ts';
import { authenticate } from './http/authenticate.ts';
import { loopbackUrl } from './mcp/serviceApi.ts';
import { gracefulStop } from './shutdown/gracefulStop.ts';
import { metricsRoutes } from './metrics/metricsRoutes.ts';
import { startMetricsServer } from './metrics/metricsServer.ts';
import { openKernel, SHUTDOWN_SETTLE_MS, type Kernel, type ServiceOverrides } from './roots/openKernel.ts';
import type { RolePart } from './roots/RolePart.ts';
import { apiRoot } from './roots/apiRoot.ts';
import { projectorRoot } from './roots/projectorRoot.ts';
import { workerRoot } from './roots/workerRoot.ts';
import { schedulerRoot } from './roots/schedulerRoot.ts';

export type { ServiceOverrides } from './roots/openKernel.ts';

export interface Service {
  url: string;
  server: Server;
  /** The Koa application behind `server` (tests enumerate its routes). */
  app: Koa<AppState>;
  eventStore: EventStore;
  readStore: ReadStore;
  bus: MessageBus;
  /** The projections of this process: null in a role that reads a shared read store (CheckpointProgress). */
  projections: ProjectionRunner | null;
  /** Read-your-writes: the runner above, or the projector's checkpoint. */
  readModels: ReadModelProgress;
  logger: JsonLinesLogger;
  /** Open streams of the logs routes (tests check that a client that left freed its stream). */
  logStreams: LogStreams;
  /** The chats' AI module (/ai/generate, /ai/agent): the chat's own code in the sandbox, else the built-in one. */
  aiModule: AiModule;
  /**
   * The bounded stop of SIGINT/SIGTERM (ops/shutdown/gracefulStop.ts): takes no more work at once,
   * waits at most SHUTDOWN_GRACE_SECONDS for the work taken (saying what it waits for through
   * `report`), then kills the runs still going (their tasks end `error`) and closes everything.
   */
  shutdown(options?: { report?(line: string): void }): Promise<void>;
  /** shutdown() without reports. */
  close(): Promise<void>;
  /** A second signal: kills every run's process group now (nothing is recorded); the caller exits. */
  abort(): void;
  /** The code runs in progress in this process (operators, actions, AI modules), oldest first. */
  activeRuns(): ActiveRun[];
  /** This process's Prometheus registry and instruments (GET /metrics). */
  metrics: ServiceMetrics;
  /** Where /metrics is served apart from the API (METRICS_PORT, on 127.0.0.1); null: on the API's port. */
  metricsUrl: string | null;
  /** The embedded read models' snapshots (SNAPSHOT_INTERVAL_EVENTS), null when there are none. */
  snapshots: ReadModelSnapshots | null;
}

/**
 * The parts of each role (DESIGN §1), in start order: `api`, `projector`, `worker`, `scheduler`,
 * and `all`, the embedded mode's one process, which is all four. A role reading a memory read store
 * projects into it itself (roles.ts: `projects`), whatever its role.
 */
const roleRoots = (k: Kernel, projections: ProjectionRunner | null, ownUrl: () => string, isReady: () => boolean) => {
  const projector = projections === null ? null : projectorRoot(k, projections);
  const parts: RolePart[] = [
    ...(projector ? [projector] : []),
    ...(k.parts.api ? [apiRoot(k, ownUrl, isReady)] : []),
    ...(k.parts.worker ? [workerRoot(k)] : []),
    ...(k.parts.scheduler ? [schedulerRoot(k)] : []),
  ];
  return { parts, projector, snapshots: projector?.snapshots ?? null };
};

/**
 * The composition root: the kernel every role shares (ops/roots/openKernel.ts), the parts of this
 * process's role (ops/roots/*Root.ts), one HTTP server. The server listens at once (health says
 * "starting") and serves once the read models are current and every part has started.
 */
export const startService = async (config: Config, overrides: ServiceOverrides = {}): Promise<Service> => {
  const k = await openKernel(config, overrides);
  const { logger, metrics, runner, projections } = k;
  let ready = false;
  let ownUrl = '';
  const { parts, projector, snapshots } = roleRoots(k, projections, () => ownUrl, () => ready);
  const routes = parts.flatMap((part) => (part.routes ? [part.routes] : []));

  // GET /metrics: in every role (each process serves its own figures), on the API's port unless METRICS_PORT names one of its own.
  const bearerAuth = authenticate({ tokens: k.tokens, users: k.users, endedSessions: k.endedSessions });
  const metricsAccess = { token: config.metrics.token, authenticate: bearerAuth };
  const metricsOnApiPort = config.metrics.port === null ? [metricsRoutes({ metrics, access: metricsAccess })] : [];
  const app = createApp({
    logger,
    bodyLimit: config.bodyLimit,
    isReady: () => ready,
    role: config.role,
    trustProxyHops: config.trustProxyHops,
    readYourWrites: { readModels: k.readModels, timeoutMs: config.readYourWritesTimeoutMs, positions: k.writePositions },
    authenticate: bearerAuth,
    observeRequest: (request) => metrics.observeRequest(request),
    ...(k.tracing === null ? {} : { traceRequests: k.tracing.middleware() }),
    // Only the api role (and all) serves the REST routes; the others answer /healthz (and /metrics) alone.
    publicRoutes: [...metricsOnApiPort, ...routes.flatMap((part) => part.publicRoutes)],
    bodyErrorRoutes: routes.flatMap((part) => part.bodyErrorRoutes),
    privateRoutes: routes.flatMap((part) => part.privateRoutes),
  });

  const server = createServer(app.callback());
  server.requestTimeout = 120_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${address.port}`;
  ownUrl = loopbackUrl(config.host, address.port);
  // At once, not when ready: the read models' lag is worth watching while they are rebuilt at start.
  const metricsServer =
    config.metrics.port === null
      ? null
      : await startMetricsServer({ port: config.metrics.port, routes: metricsRoutes({ metrics, access: { ...metricsAccess, loopback: true } }), logger });

  // The read models first (the projector's part, when this process projects); then, before any run
  // can start, the beats and the rights runs follow (the kernel); then the other roles; last, what
  // needs the whole process up (the log's publication, a requested rebuild).
  for (const part of parts) if (part === projector) await part.start?.();
  await k.startRunning();
  for (const part of parts) if (part !== projector) await part.start?.();
  for (const part of parts) await part.startLate?.();
  ready = true;
  logger.log({ level: 'info', category: 'API', message: `Service (role ${config.role}) ready on ${url}` });

  return {
    url,
    server,
    app,
    eventStore: k.eventStore,
    readStore: k.readStore,
    bus: k.bus,
    projections,
    readModels: k.readModels,
    logger,
    logStreams: k.logStreams,
    aiModule: k.aiModule,
    shutdown,
    close: () => shutdown(),
    activeRuns: () => runner.activeRuns(),
    metrics,
    metricsUrl: metricsServer?.url ?? null,
    snapshots,
    abort() {
      k.stopping.abort();
      runner.stopRuns('the service was stopped at once (a second signal) before the run ended');
    },
  };

  async function shutdown(options: { report?(line: string): void } = {}): Promise<void> {
    // Stop taking work, all at once: health and new requests answer 503, no new connection, no
    // delivered run is picked up, the worker leaves the bus (no new deliveries), no reaper or cron pass starts.
    ready = false;
    k.stopping.abort();
    for (const part of parts) part.stopTaking?.();
    const report = (line: string) => {
      options.report?.(line);
      logger.log({ level: 'info', category: 'API', message: line });
    };
    const pending = [
      ...parts.flatMap((part) => part.pending?.() ?? []),
      { name: 'HTTP requests in progress', done: new Promise<void>((resolve) => server.close(() => resolve())) },
    ];
    await gracefulStop(
      { pending, runs: () => runner.activeRuns(), stopRuns: (reason) => runner.stopRuns(reason) },
      { graceSeconds: config.shutdownGraceSeconds, settleMs: SHUTDOWN_SETTLE_MS, report },
    );
    server.closeAllConnections();
    await metricsServer?.close();
    for (const part of [...parts].reverse()) await part.close?.();
    await k.closeWork();
    for (const part of [...parts].reverse()) await part.closeLast?.();
    await k.closeStores();
  }
};
