import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { chmodSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import { systemClock, type Clock } from '../shared/clock.ts';
import { metadataFor } from '../shared/events.ts';
import type { EventStore } from '../shared/event-store/EventStore.ts';
import type { Collection, ReadStore } from '../shared/read-store/ReadStore.ts';
import { AppError } from '../shared/errors.ts';
import type { MessageBus } from '../shared/bus/MessageBus.ts';
import type { AppState } from '../shared/http/AppState.ts';
import type { Mailer } from '../shared/ports/Mailer.ts';
import type { PasswordHasher } from '../shared/ports/PasswordHasher.ts';
import { authHandler } from '../command-side/auth/handler.ts';
import { authRoutes } from '../command-side/auth/routes.ts';
import { userHandler, type UserHandler } from '../command-side/user/handler.ts';
import { userCommandRoutes } from '../command-side/user/routes.ts';
import { userQueryRoutes } from '../query-side/user/routes.ts';
import { groupHandler } from '../command-side/group/handler.ts';
import { groupCommandRoutes } from '../command-side/group/routes.ts';
import { groupQueryRoutes } from '../query-side/group/routes.ts';
import { groupsProjection } from '../projections/groups/groupsProjection.ts';
import { groupMembersProjection } from '../projections/groups/groupMembersProjection.ts';
import { ProjectionRunner } from '../projections/runner/ProjectionRunner.ts';
import { ITEMS, itemsProjection } from '../projections/catalog/itemsProjection.ts';
import type { ItemDoc } from '../shared/read-models/ItemDoc.ts';
import { LINKS, linksProjection } from '../projections/catalog/linksProjection.ts';
import type { LinkDoc } from '../shared/read-models/LinkDoc.ts';
import { createAccessControl } from '../projections/catalog/accessControl.ts';
import { groupsOfPrincipal } from '../projections/groups/groupsOfPrincipal.ts';
import { catalogCommandRoutes } from '../command-side/catalog/routes.ts';
import { catalogQueryRoutes } from '../query-side/catalog/routes.ts';
import { queueMetricsProjection } from '../projections/catalog/queueMetricsProjection.ts';
import { queueHandler } from '../command-side/queue/handler.ts';
import { taskRoutes } from '../command-side/task/routes.ts';
import { actionRoutes } from '../command-side/action/routes.ts';
import { executeTask, type WorkerDeps } from '../command-side/task/executeTask.ts';
import { HeartbeatStore } from '../command-side/task/HeartbeatStore.ts';
import { RelayedHeartbeats } from './liveness/RelayedHeartbeats.ts';
import { reapStaleLeases } from '../command-side/task/reapStaleLeases.ts';
import { WorkerSlots, type SlotPolicy } from '../command-side/task/WorkerSlots.ts';
import { EXECUTE_TASK, type TaskDeps } from '../command-side/task/taskDeps.ts';
import type { ExecuteTaskMessage } from '../command-side/task/dispatchConnection.ts';
import { ProcessCodeRunner, type ActiveRun } from './worker/ProcessCodeRunner.ts';
import { followReuseRevocations } from '../command-side/task/reuseRevocation.ts';
import { cronLiveness } from '../projections/cron/cronLiveness.ts';
import { busCronOwnership, createCronScheduler } from '../command-side/cron/cronScheduler.ts';
import { cronRoutes } from '../command-side/cron/routes.ts';
import { diagnosisJournal } from '../command-side/cron/diagnosisJournal.ts';
import { readyToRunRoutes } from '../query-side/task/readyToRunRoutes.ts';
import { diagnoseRoutes } from '../query-side/task/diagnoseRoutes.ts';
import { cronStatusRoutes } from '../query-side/task/cronStatusRoutes.ts';
import { USERS, usersProjection } from '../projections/users/usersProjection.ts';
import type { UserDoc } from '../shared/read-models/UserDoc.ts';
import { ENDED_SESSIONS, endedSessionsProjection } from '../projections/sessions/endedSessionsProjection.ts';
import type { EndedSessionDoc } from '../shared/read-models/EndedSessionDoc.ts';
import { MemoryReadStore } from '../projections/read-store/MemoryReadStore.ts';
import { CheckpointProgress } from '../projections/runner/CheckpointProgress.ts';
import type { ReadModelProgress } from '../shared/read-store/ReadModelProgress.ts';
import { openMongoReadStore } from './read-store/mongodb/MongoReadStore.ts';
import type { Config } from './config.ts';
import { roleParts } from './roles.ts';
import { openEventStore } from './event-store/openEventStore.ts';
import { InProcessBus } from './bus/InProcessBus.ts';
import { KafkaBus } from './bus/kafka/KafkaBus.ts';
import { kafkaClientSecurity, kafkaSecurityWarning } from './bus/kafka/kafkaSecurity.ts';
import { prefixedBus } from './bus/prefixedBus.ts';
import { createApp } from './http/createApp.ts';
import { consoleRoutes } from './console/consoleRoutes.ts';
import { authenticate } from './http/authenticate.ts';
import { JsonLinesLogger } from './logging/JsonLinesLogger.ts';
import { findSessionLogFile } from './logging/sessionLogFile.ts';
import { publicRouteGuard } from './http/publicRouteGuard.ts';
import { logRoutes } from '../query-side/logs/logRoutes.ts';
import { LogStreams } from '../query-side/logs/LogStreams.ts';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_POLL_MS } from '../query-side/logs/streamSession.ts';
import { startLogRetention } from './logging/logRetention.ts';
import { createMailer } from './mail/createMailer.ts';
import { loadKeys } from './keys/loadKeys.ts';
import { AesSecretBox } from './keys/AesSecretBox.ts';
import { JoseTokenSigner } from './auth/JoseTokenSigner.ts';
import { scryptPasswords } from './auth/scryptPasswords.ts';
import { resolveRedirect } from './auth/isAllowedRedirect.ts';
import { failureThrottle, loginThrottle, memoryLimiters, rateThrottle } from './auth/rateLimiterThrottles.ts';
import { secureDataDir } from './secureDataDir.ts';
import { eventRoutes } from '../query-side/events/routes.ts';
import { logQueries } from '../query-side/logs/queryLogs.ts';
import { logsQueryRoutes } from '../query-side/logs/queryRoute.ts';
import { EventStreams } from '../query-side/events/EventStreams.ts';
import { startDomainEventPublishing } from './bus/kafka/DomainEventPublisher.ts';
import { nodeForkAddonLoads } from './worker/nodeForkProgram.ts';
import { decideSandbox, probeBwrap, resolvePython } from './worker/sandbox.ts';
import { claimRunIdentities } from './worker/runIdentityRegistry.ts';
import { serviceHosts, startNetworkPolicy } from './worker/networkPolicy.ts';
import { queryRoutes } from '../query-side/query/queryRoute.ts';
import { queryTargetFactory } from './query/queryTargets.ts';
import { marketplaceRoutes } from '../command-side/marketplace/routes.ts';
import { HttpMarketplace } from './marketplace/HttpMarketplace.ts';
import type { AiModule } from '../shared/ports/AiModule.ts';
import { agentRoutes } from '../command-side/ai/agent/agentRoutes.ts';
import { optionalCaller } from './http/optionalCaller.ts';
import { mcpRoutes } from './mcp/mcpRoutes.ts';
import { mcpToolbox } from './mcp/mcpToolbox.ts';
import { loopbackServiceApi, loopbackUrl } from './mcp/serviceApi.ts';
import { createAiModule } from './ai/createAiModule.ts';
import { loadGuideTexts } from './ai/guideTexts.ts';
import { TempGenerationSessions } from './ai/TempGenerationSessions.ts';
import { optionalAuthentication } from './http/optionalAuthentication.ts';
import { generateRoutes } from '../command-side/ai/generateRoutes.ts';
import { apiReferenceRoutes } from './http/apiReferenceRoutes.ts';
import { recordWritePositions, WritePositions } from './http/readYourWrites.ts';
import { ServiceTracing } from './tracing/ServiceTracing.ts';
import { ReadModelSnapshots } from './snapshots/ReadModelSnapshots.ts';
import { snapshotFolder } from './snapshots/snapshotFile.ts';
import { serviceVersion } from './serviceVersion.ts';
import { gracefulStop, settledWithin } from './shutdown/gracefulStop.ts';
import { ServiceMetrics } from './metrics/ServiceMetrics.ts';
import { timedAppends } from './metrics/timedAppends.ts';
import { projectionLag } from './metrics/projectionLag.ts';
import { metricsRoutes } from './metrics/metricsRoutes.ts';
import { startMetricsServer } from './metrics/metricsServer.ts';
import { CHECKPOINTS, checkpointPosition } from '../projections/runner/checkpoints.ts';

/** The checkpoint name of the projector writing a shared (MongoDB) read store. */
const PROJECTOR = 'projector';
/** After the grace period: how long stopped runs get to record their ends, and the bus its handlers. */
const SHUTDOWN_SETTLE_MS = 15_000;

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

export interface ServiceOverrides {
  clock?: Clock;
  mailer?: Mailer;
  passwords?: PasswordHasher;
  /** Where the one-time admin password is announced (the console by default). */
  announce?(message: string): void;
  /**
   * The event store as the features see it: tests run the service on a view of the SQLite store
   * without multi-stream transactions, the path of the EventStoreDB adapter.
   */
  eventStoreView?(store: EventStore): EventStore;
  /** The AI module of the chat items (tests: a scripted one). */
  aiModule?: AiModule;
  /** How worker slots are handed out: `fifo` is the bench's baseline only (never a setting); default `fair`. */
  slotPolicy?: SlotPolicy;
}

/**
 * Messages of execute_task a worker process takes from the bus at once (its bus consumer's
 * concurrency): many more than its slots, so that the runs waiting for a slot wait in WorkerSlots,
 * which takes turns between projects, rather than in the bus, which delivers in arrival order. Fair
 * share holds among the runs taken (README, Operations); each costs a pending handler (~1 kB beside
 * its message, which the in-process bus keeps anyway). Kafka hands a member one record per
 * partition at a time: there the intake is the partitions' heads.
 */
const WORKER_INTAKE = 10_000;

/**
 * The composition root of the embedded mode: every real adapter is built here and handed to the
 * feature factories as ports. The server listens at once (health says "starting") and serves
 * once the read models have been rebuilt from the log.
 */
export const startService = async (config: Config, overrides: ServiceOverrides = {}): Promise<Service> => {
  const parts = roleParts(config);
  const clock = overrides.clock ?? systemClock;
  const announce = overrides.announce ?? ((message: string) => console.log(message));
  // KAFKA_SSL's files are read and checked now: one that is missing or wrong stops the start before
  // anything is opened, naming the variable (never the SASL password).
  const kafkaSecurity = config.bus.kind === 'kafka' ? kafkaClientSecurity(config.bus) : undefined;
  // Run processes never hold the service's rights: another uid per process when root, else a
  // bubblewrap sandbox when it works here (probed once, now, off the request path). Decided before
  // anything is opened: WORKER_SANDBOX=bwrap without bubblewrap fails the start.
  const isRoot = process.getuid?.() === 0;
  const wantsBwrap = !isRoot && (config.workerSandbox === 'bwrap' || (config.workerSandbox === 'auto' && config.workerRunAs === null));
  const sandbox = decideSandbox({
    isRoot,
    setting: config.workerSandbox,
    runAs: config.workerRunAs,
    bwrapUsable: wantsBwrap && probeBwrap(nodeForkAddonLoads),
  });
  if (config.workerSandbox === 'bwrap' && sandbox.kind !== 'bwrap') {
    throw new Error(sandbox.kind === 'refused' ? sandbox.message : 'WORKER_SANDBOX=bwrap: bubblewrap is not usable here');
  }
  // Two instances on one host must never hand out the same uid (RunIdentities keeps them apart within
  // one): as root the range is claimed host-wide, and a range overlapping a live instance's refuses
  // the start (README, Security). Not root (WORKER_RUN_AS_* with CAP_SETUID): /run is not ours; no claim.
  const identityClaim = sandbox.kind === 'run-as' && isRoot ? claimRunIdentities(sandbox.range, config.workerRunAsRegistry) : null;
  // What run processes may connect to (WORKER_NETWORK): as root, this instance's nftables table on
  // the run identities, in force before any run; a service host that does not resolve fails the start.
  const network = await startNetworkPolicy({ network: config.workerNetwork, sandbox, services: serviceHosts(config) });
  secureDataDir(config.dataDir);
  // The one logs root (LOG_DIR, default DATA_DIR/logs): the logger writes under it, the logs routes read it.
  const logsRoot = config.logDir;
  const logger = new JsonLinesLogger(logsRoot, clock, config.logToConsole ? (line) => process.stdout.write(line) : undefined);
  // Run sessions hold what code printed (a connection's values, another user's data): a LOG_DIR
  // outside DATA_DIR gets its mode (0700, at every start) and is hidden from sandboxed runs too.
  const logsOutsideData = relative(config.dataDir, config.logDir).startsWith('..') || isAbsolute(relative(config.dataDir, config.logDir));
  if (logsOutsideData) chmodSync(config.logDir, 0o700);
  const retention = startLogRetention({
    root: config.logDir,
    days: config.logRetentionDays,
    clock,
    onError: (error) => logger.log({ level: 'error', category: 'API', message: `Log retention failed: ${String(error)}` }),
  });
  const keys = await loadKeys(config);
  const secrets = new AesSecretBox(keys.encryptionKey);
  const tokens = new JoseTokenSigner(keys.jwtPrivateKey, keys.jwtPublicKey, clock);
  const passwords = overrides.passwords ?? scryptPasswords();
  const mailer = overrides.mailer ?? createMailer(config.mail, logger);
  if (config.mail.transport === 'log' && config.emailTotp) {
    const warning = 'MAIL_TRANSPORT=log: sign-in codes are written to the service log, not mailed; whoever reads the log can sign in as any user. For trials on one machine only';
    logger.log({ level: 'warning', category: 'API', message: warning });
    announce(`WARNING: ${warning}`);
  }

  // This process's Prometheus figures (ops/metrics). The gauges are read when scraped, once the
  // service listens: by then the worker slots and the read models below exist.
  const metrics = new ServiceMetrics({
    slotsBusy: () => (parts.worker ? slots.running : 0),
    slotsCapacity: () => (parts.worker ? slots.slots : 0),
    projectionLag: () => lagOfReadModels(),
  });
  // OpenTelemetry traces (OTEL_EXPORTER_OTLP_ENDPOINT...): off when none is set (no provider, no exporter, nothing recorded).
  const tracing = config.tracing === null ? null : new ServiceTracing({ ...config.tracing, serviceVersion: serviceVersion() });
  // Commits of the embedded store run on a writer thread: a writer (or a KurrentDB) that cannot start fails the start.
  const store = await openEventStore(config);
  // Every append is recorded against the request it serves (writes answer X-Event-Position) and timed.
  const writePositions = new WritePositions();
  const eventStore: EventStore = recordWritePositions(timedAppends(overrides.eventStoreView ? overrides.eventStoreView(store) : store, (seconds) => metrics.observeAppend(seconds)), writePositions);
  const readStore: ReadStore =
    config.readStore.kind === 'mongodb' ? await openMongoReadStore({ url: config.readStore.url, database: config.readStore.database }) : new MemoryReadStore();
  // The embedded bus: its messages live in this process, so the reaper can ask it whether a run's
  // message is still there (judgeLease).
  let inProcessBus: InProcessBus | null = null;
  const bus: MessageBus =
    config.bus.kind === 'kafka'
      ? prefixedBus(
          new KafkaBus({
            brokers: config.bus.brokers,
            clientId: config.bus.clientId,
            concurrency: WORKER_INTAKE,
            // A member heartbeats ten times per session, so one late beat does not cost it its partitions.
            sessionTimeoutMs: config.bus.sessionTimeoutMs,
            heartbeatIntervalMs: Math.max(100, Math.floor(config.bus.sessionTimeoutMs / 10)),
            ...(kafkaSecurity ? { security: kafkaSecurity } : {}),
            logger,
          }),
          config.bus.topicPrefix,
        )
      : (inProcessBus = new InProcessBus({ concurrency: WORKER_INTAKE }));
  // The projecting roles apply the log to the read store; the others (api, worker, scheduler on a
  // shared MongoDB) follow the projector's checkpoint for read-your-writes. The checkpoint's id is
  // the runner's name: one name per read-store database.
  const projections = !parts.projects ? null : new ProjectionRunner({
    name: config.readStore.kind === 'mongodb' ? PROJECTOR : 'embedded',
    eventStore,
    readStore,
    projections: [usersProjection, endedSessionsProjection, groupsProjection, groupMembersProjection, itemsProjection, linksProjection, queueMetricsProjection],
    onProgress: (progress) =>
      announce(`Rebuilding read models: ${progress.position}/${progress.head} (${progress.eventsPerSecond} events/s)`),
    onError: (error) => logger.log({ level: 'critical', category: 'API', message: `Projection failed: ${String(error)}` }),
  });
  const readModels: ReadModelProgress = projections ?? new CheckpointProgress({ readStore, name: PROJECTOR });
  // The log's head minus what the read models this process reads have applied: its own runner's
  // position, or (a role reading the shared store) the projector's checkpoint, read at each scrape.
  const lagOfReadModels = projectionLag({
    eventStore,
    applied: async () => (projections ? projections.position() : checkpointPosition(await readStore.collection(CHECKPOINTS).get(PROJECTOR))),
    positionsCountEvents: config.eventStore.kind !== 'kurrentdb',
  });
  const users = readStore.collection<UserDoc>(USERS, usersProjection.indexes);
  const endedSessions = readStore.collection<EndedSessionDoc>(ENDED_SESSIONS, endedSessionsProjection.indexes);
  const userCommands = userHandler({ eventStore, passwords, secrets });
  const items = readStore.collection<ItemDoc>(ITEMS, itemsProjection.indexes);
  const links = readStore.collection<LinkDoc>(LINKS, linksProjection.indexes);
  const access = createAccessControl({ items, groupsOf: (laui) => groupsOfPrincipal(readStore, laui), users });
  // Run processes never hold the service's rights (README, Security): decided at the top.
  if (sandbox.kind === 'bwrap') {
    logger.log({ level: 'info', category: 'API', message: 'code runs in bubblewrap sandboxes (the service does not run as root): DATA_DIR and the code tree are hidden from them' });
  }
  if (sandbox.kind === 'none') {
    logger.log({ level: 'warning', category: 'API', message: sandbox.warning });
    announce(`WARNING: ${sandbox.warning}`);
  }
  if (sandbox.kind === 'refused') {
    logger.log({ level: 'warning', category: 'API', message: sandbox.message });
    announce(`WARNING: ${sandbox.message}`);
  }
  for (const warning of [network.warning, network.refused, config.bus.kind === 'kafka' ? kafkaSecurityWarning(config.bus) : null]) {
    if (warning === null) continue;
    logger.log({ level: 'warning', category: 'API', message: warning });
    announce(`WARNING: ${warning}`);
  }
  if (network.summary !== null) logger.log({ level: 'info', category: 'API', message: network.summary });
  const refused = sandbox.kind === 'refused' ? sandbox.message : network.refused;
  const runner = new ProcessCodeRunner({
    // WORKER_PYTHON (checked: a bad one fails the start) or the system python3; never one on PATH.
    pythonPath: resolvePython(config.workerPython),
    poolSize: config.workerPoolSize,
    // Every worker slot may be running the same reuse operator for the same user at once; all
    // scopes together keep at most WORKER_REUSE_MAX_IDLE idle processes.
    maxIdleReusable: config.workerConcurrency,
    maxIdleReusableTotal: config.workerReuseMaxIdle,
    nodeForkServer: config.workerNodeFork,
    maxRunsPerProcess: config.workerReuseMaxRuns,
    ...(sandbox.kind === 'run-as' ? { runAs: sandbox.range } : {}),
    // As root each run process gets namespaces, a root and limits of its own (README, Security):
    // DATA_DIR and LOG_DIR are hidden from it, with the checkout.
    sandbox: { diskMb: config.workerDiskMb, shmMb: config.workerShmMb, maxProcesses: config.workerMaxProcesses, cpuWeight: config.workerCpuWeight, network: 'host' },
    hidden: [config.dataDir, config.logDir],
    // DATA_DIR (keys, event log, logs) is an empty directory in the sandbox; so is the code tree.
    ...(sandbox.kind === 'bwrap' ? { bwrap: { hidden: logsOutsideData ? [config.dataDir, config.logDir] : [config.dataDir], unshareNet: network.unshareNet } } : {}),
    ...(refused !== null ? { disabled: refused } : {}),
    // How much of each run's output its session logs (README, Run output).
    outputLines: config.runOutput,
    // Warm interpreters only where operator runs are the daily work; an API's actions start cold.
    prewarm: parts.worker && config.workerPoolSize > 0 ? [{ language: 'python', memoryMb: config.workerMemoryMb }, { language: 'javascript', memoryMb: config.workerMemoryMb }] : [],
  });
  if (runner.isolationSwitchedOff) {
    const warning = 'CODERUN_ISOLATION=off: run processes get no sandbox of their own (namespaces, root, limits); runs can see each other and the host. For benchmarks and diagnostics only.';
    logger.log({ level: 'warning', category: 'API', message: warning });
    announce(`WARNING: ${warning}`);
  }
  const limits = { timeoutMs: config.workerTimeoutSeconds * 1000, memoryMb: config.workerMemoryMb, maxOutputBytes: config.workerMaxOutputBytes };
  const taskDeps: TaskDeps = { eventStore, items, links, access, clock, secrets, bus, tokens, queue: queueHandler(eventStore), logger, runner, limits, ...(tracing === null ? {} : { tracing }) };
  // On Kafka the workers and the reaper may be different processes: beats cross on the bus.
  const relayedHeartbeats =
    config.bus.kind === 'kafka'
      ? new RelayedHeartbeats({ bus, onError: (error) => logger.log({ level: 'warning', category: 'CELERY', message: `Relaying a task heartbeat failed: ${String(error)}` }) })
      : null;
  // Aborted when the stop begins: a delivered run not picked up yet is left to the bus (executeTask).
  const stopping = new AbortController();
  const slots = new WorkerSlots({ slots: config.workerConcurrency, policy: overrides.slotPolicy ?? 'fair', now: () => clock.now() });
  const workerDeps: WorkerDeps = {
    ...taskDeps,
    stopping: stopping.signal,
    heartbeats: relayedHeartbeats ?? new HeartbeatStore(),
    slots,
    pollIntervalMs: config.workerPollIntervalMs,
    slaMinuteMs: config.slaMinuteMs,
    readModels,
    readYourWritesTimeoutMs: config.readYourWritesTimeoutMs,
    runs: metrics,
  };
  // One scheduler loop per started project; loops start once the read models are current (below).
  // Which projects are this process's is the bus's partition assignment (all of them in process).
  const liveness = cronLiveness(readStore);
  const cronDeps = { ...taskDeps, liveness };
  const cron = createCronScheduler(cronDeps, { ownership: busCronOwnership(bus) });

  // Brute-force counters live in this process (embedded mode); see LimiterFactory for a shared store.
  const throttles = {
    login: loginThrottle(memoryLimiters, config.throttle.login),
    token: failureThrottle(memoryLimiters, 'token-address', { ...config.throttle.login.perUserAddress, maxFailures: config.throttle.tokenMaxFailuresPerAddress }, 'release'),
    mail: rateThrottle(memoryLimiters, 'mail-recipient', config.throttle.mailsPerAddressPerHour, 3600),
    passwordChange: failureThrottle(
      memoryLimiters,
      'password-change',
      { ...config.throttle.login.perUserAddress, maxFailures: config.throttle.passwordChangeMaxFailures },
      'reset',
    ),
  };

  // Analysts' and auditors' reads of the log (docs/events.md) follow the store itself, not a read model.
  const eventStreams = new EventStreams({ eventStore, logger, settings: config.eventStream });

  // Logs and AI routes: public unless PUBLIC_ROUTES_REQUIRE_AUTH (Bearer or frontend_token cookie).
  const accessCookieAuth = authenticate({ tokens, users, endedSessions, acceptAccessCookie: true });
  const publicGuard = publicRouteGuard({ requireAuth: config.publicRoutesRequireAuth, authenticate: accessCookieAuth });
  // Public (spec 4.9); each query runs in its own DuckDB sandbox over one category's folder.
  const logsQuery = logsQueryRoutes({ queries: logQueries({ logsRoot, settings: config.logQuery }), guard: publicGuard });
  const logStreams = new LogStreams(config.logStreams);
  // The MCP server's tools call the REST routes on the service's own address (known once it listens).
  let ownUrl = '';
  const mcp = mcpRoutes({ api: loopbackServiceApi(() => ownUrl) });
  // AI (spec 4.11): public like the logs, with the caller's identity when a token is sent (VIEW on the chat).
  const aiTimeoutMs = config.ai.timeoutSeconds * 1000;
  const aiModule: AiModule = overrides.aiModule ?? createAiModule({ runner, logger, clock, timeoutMs: aiTimeoutMs, maxRetries: config.ai.maxRetries, limits });
  const generationSessions = new TempGenerationSessions();

  // GET /metrics: in every role (each process serves its own figures), on the API's port unless METRICS_PORT names one of its own.
  const bearerAuth = authenticate({ tokens, users, endedSessions });
  const metricsAccess = { token: config.metrics.token, authenticate: bearerAuth };
  const metricsOnApiPort = config.metrics.port === null ? [metricsRoutes({ metrics, access: metricsAccess })] : [];

  let ready = false;
  const app = createApp({
    logger,
    bodyLimit: config.bodyLimit,
    isReady: () => ready,
    role: config.role,
    trustProxyHops: config.trustProxyHops,
    readYourWrites: { readModels, timeoutMs: config.readYourWritesTimeoutMs, positions: writePositions },
    authenticate: bearerAuth,
    observeRequest: (request) => metrics.observeRequest(request),
    ...(tracing === null ? {} : { traceRequests: tracing.middleware() }),
    // Only the api role (and all) serves the REST routes; the others answer /healthz (and /metrics) alone.
    publicRoutes: [...metricsOnApiPort, ...(!parts.api ? [] : [
      // GET /api/v1/openapi.json and /api/v1/docs: the API reference (ops/http/apiRouteDocs.ts lists every route's docs).
      apiReferenceRoutes(),
      authRoutes({
        auth: authHandler({ eventStore, clock }),
        tokens,
        users,
        endedSessions,
        readModels,
        readYourWritesTimeoutMs: config.readYourWritesTimeoutMs,
        passwords,
        mailer,
        clock,
        emailTotp: config.emailTotp,
        loginThrottle: throttles.login,
        tokenThrottle: throttles.token,
        mailThrottle: throttles.mail,
        cookieSecure: config.cookieSecure,
        resolveRedirect: (uri, serviceOrigin) => resolveRedirect(uri, config.allowedRedirectOrigins, serviceOrigin),
      }),
      logsQuery,
      // Spec 4.10/5.2: a Bearer token or the browser's cookies (frontend_token, or the login session
      // cookie); mounted outside the Bearer-only wall for that reason, with its own authentication.
      queryRoutes({
        items,
        access,
        secrets,
        targets: queryTargetFactory(),
        settings: config.query,
        authenticate: authenticate({ tokens, users, endedSessions, acceptAccessCookie: true, acceptSessionCookie: true }),
      }),
      generateRoutes({
        eventStore, items, links, access, clock, secrets, logger, aiModule,
        syntaxChecker: runner,
        syntaxLimits: { ...limits, timeoutMs: Math.min(aiTimeoutMs, 30_000) },
        guides: loadGuideTexts(),
        sessions: generationSessions,
        readModels,
        readYourWritesTimeoutMs: config.readYourWritesTimeoutMs,
        guard: publicGuard,
        optionalAuth: optionalAuthentication(accessCookieAuth),
      }),
      logRoutes({
        logsRoot,
        findSessionFile: (sessionId) => findSessionLogFile(logsRoot, sessionId),
        streams: logStreams,
        guard: publicGuard,
        // A stream counts against its caller's share when it shows a valid token, else its address's.
        identify: optionalCaller(accessCookieAuth, { badCredential: 'anonymous' }),
        follow: { idleTimeoutMs: config.logFollowIdleSeconds * 1000, heartbeatMs: DEFAULT_HEARTBEAT_MS, pollMs: DEFAULT_POLL_MS },
        logger,
      }),
      agentRoutes({
        eventStore,
        items,
        links,
        access,
        clock,
        secrets,
        aiModule,
        logger,
        openTools: mcpToolbox({ ownUrl: () => ownUrl, ...config.mcp }),
        readModels,
        readYourWritesTimeoutMs: config.readYourWritesTimeoutMs,
        guard: publicGuard,
        identify: optionalCaller(accessCookieAuth),
      }),
      // The web console (ops/console): its page at / and /console/*, its assets; the API is unchanged.
      consoleRoutes(),
    ])],
    bodyErrorRoutes: parts.api ? [logsQuery, mcp] : [],
    privateRoutes: !parts.api ? [] : [
      taskRoutes({ ...taskDeps, readModels, readYourWritesTimeoutMs: config.readYourWritesTimeoutMs }),
      actionRoutes({ ...taskDeps, runner, limits: workerDeps.limits, readModels, readYourWritesTimeoutMs: config.readYourWritesTimeoutMs }),
      catalogQueryRoutes({ items, links, access, eventStore }),
      cronRoutes({ ...cronDeps, scheduler: cron, readModels, readYourWritesTimeoutMs: config.readYourWritesTimeoutMs }),
      cronStatusRoutes({ items, access, clock, liveness }),
      readyToRunRoutes({ items, access, clock }),
      diagnoseRoutes({
        items,
        access,
        clock,
        liveness,
        journal: diagnosisJournal(eventStore),
        // Workers subscribe before the service is ready and leave when it closes.
        workers: {
          heartbeat: (laui) => workerDeps.heartbeats.last(laui),
          running: () => ready,
          broker: config.bus.kind === 'kafka' ? `Kafka (${config.bus.brokers.join(', ')})` : 'in-process bus',
          // The wait of a run for a slot of this process's worker (none in a role without one).
          slotWait: (laui) => (parts.worker ? slots.waitOf(laui) : null),
        },
      }),
      catalogCommandRoutes({ eventStore, items, links, access, clock, secrets, readModels, readYourWritesTimeoutMs: config.readYourWritesTimeoutMs }),
      userQueryRoutes({ users, secrets }),
      marketplaceRoutes({
        eventStore,
        items,
        links,
        access,
        clock,
        secrets,
        users,
        logger,
        marketplace: config.marketplace.url === null ? null : new HttpMarketplace({ ...config.marketplace, url: config.marketplace.url }),
        readModels,
        readYourWritesTimeoutMs: config.readYourWritesTimeoutMs,
      }),
      eventRoutes({ eventStore, streams: eventStreams }),
      userCommandRoutes({ users: userCommands, passwordChangeThrottle: throttles.passwordChange, clock, readModels, readYourWritesTimeoutMs: config.readYourWritesTimeoutMs }),
      groupQueryRoutes({ readStore }),
      groupCommandRoutes({
        groups: groupHandler({ eventStore, readStore }),
        clock,
        readModels,
        readYourWritesTimeoutMs: config.readYourWritesTimeoutMs,
      }),
      mcp,
    ],
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

  // The embedded read models start from their newest snapshot (DATA_DIR/snapshots) and replay only
  // the log after it; snapshots are then taken in the background (ops/snapshots).
  const snapshots =
    projections !== null && readStore instanceof MemoryReadStore && config.snapshotIntervalEvents > 0 && !config.rebuildReadModels
      ? new ReadModelSnapshots({ dir: snapshotFolder(config.dataDir), runner: 'embedded', store: readStore, projections, head: () => eventStore.headPosition(), intervalEvents: config.snapshotIntervalEvents, logger, announce })
      : null;
  await snapshots?.load();
  await projections?.start();
  snapshots?.start();
  if (parts.api) await ensureAdmin(config, { users, userCommands, readModels, clock, announce });
  // Every role but the projector reads beats (the reaper, diagnose) or sends them (workers).
  if (parts.api || parts.worker || parts.scheduler) await relayedHeartbeats?.start(`${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`);
  // Reuse processes die with their owner's rights (command-side/task/reuseRevocation.ts): every role
  // that runs code (api: /action/run and hooks, worker, scheduler: pre-actions) follows the log from
  // here on, before any run can start.
  const revocations =
    parts.api || parts.worker || parts.scheduler
      ? await followReuseRevocations({
          eventStore,
          logger,
          runner,
          parentOf: async (laui) => (await items.peek(laui))?.parent_laui ?? null,
          groupsOf: (laui) => groupsOfPrincipal(readStore, laui),
        })
      : null;
  // Workers and the lease reaper start once the read models are current: they read task state.
  const worker = parts.worker ? await bus.subscribe<ExecuteTaskMessage>({ topic: EXECUTE_TASK, group: 'workers', handler: executeTask(workerDeps) }) : null;
  let reaping = Promise.resolve(0);
  const reaperOptions = {
    // Only the in-process bus can say a run's message is gone; Kafka keeps it until a worker took it.
    busHolds: inProcessBus === null ? null : (laui: string) => (inProcessBus as InProcessBus).holds(EXECUTE_TASK, 'workers', laui),
    watchingSince: clock.now(),
  };
  const reaper = !parts.scheduler ? undefined : setInterval(() => {
    reaping = reaping
      .then(async () => reapStaleLeases(workerDeps, (await items.find({ where: { queue_active: true } })).map((doc) => doc.laui), reaperOptions))
      .catch((error: unknown) => {
        logger.log({ level: 'error', category: 'CELERY', message: `Lease reaper failed: ${String(error)}` });
        return 0;
      });
  }, config.reaperIntervalMs);
  reaper?.unref();
  if (parts.scheduler) cron.start();
  // Kafka mode only: the log is also published to `domain-events` for analysts' own consumers.
  const publisher = parts.publisher ? await startDomainEventPublishing(config.bus, { eventStore, dataDir: config.dataDir, ...(kafkaSecurity ? { security: kafkaSecurity } : {}), logger }) : null;
  if (config.rebuildReadModels && projections) {
    // In the background: the live models keep serving until the rebuilt ones are swapped in.
    announce('Rebuilding the read models into fresh collections (READ_MODELS_REBUILD)');
    projections.rebuild().then(
      () => logger.log({ level: 'info', category: 'API', message: 'Read models rebuilt and swapped in' }),
      (error: unknown) => logger.log({ level: 'error', category: 'API', message: `Read-model rebuild failed (the live models stay): ${String(error)}` }),
    );
  }
  ready = true;
  logger.log({ level: 'info', category: 'API', message: `Service (role ${config.role}) ready on ${url}` });

  return {
    url,
    server,
    app,
    eventStore,
    readStore,
    bus,
    projections,
    readModels,
    logger,
    logStreams,
    aiModule,
    shutdown,
    close: () => shutdown(),
    activeRuns: () => runner.activeRuns(),
    metrics,
    metricsUrl: metricsServer?.url ?? null,
    snapshots,
    abort() {
      stopping.abort();
      runner.stopRuns('the service was stopped at once (a second signal) before the run ended');
    },
  };

  async function shutdown(options: { report?(line: string): void } = {}): Promise<void> {
    // Stop taking work, all at once: health and new requests answer 503, no new connection, no
    // delivered run is picked up, the worker leaves the bus (no new deliveries), no reaper or cron pass starts.
    ready = false;
    stopping.abort();
    // Runs waiting for a slot are given back at once (not acknowledged: Kafka hands them to another
    // worker; in the embedded mode the next start's reaper finds their messages gone).
    slots.close();
    clearInterval(reaper);
    const report = (line: string) => {
      options.report?.(line);
      logger.log({ level: 'info', category: 'API', message: line });
    };
    // Open SSE streams would keep server.close() waiting for ever.
    eventStreams.closeAll();
    logStreams.closeAll();
    const pending = [
      { name: 'the worker (runs delivered to it, and recording their ends)', done: worker?.close() ?? Promise.resolve() },
      { name: 'HTTP requests in progress', done: new Promise<void>((resolve) => server.close(() => resolve())) },
      { name: "the scheduler's current pass (pre-actions)", done: cron.stop() },
      { name: 'the lease reaper', done: reaping },
    ];
    await gracefulStop(
      { pending, runs: () => runner.activeRuns(), stopRuns: (reason) => runner.stopRuns(reason) },
      { graceSeconds: config.shutdownGraceSeconds, settleMs: SHUTDOWN_SETTLE_MS, report },
    );
    server.closeAllConnections();
    await metricsServer?.close();
    await relayedHeartbeats?.close();
    await publisher?.close();
    // The bus waits for its handlers: one that did not end even after its run was stopped is
    // abandoned (gracefulStop said so), not waited for without end.
    await settledWithin(bus.close(), SHUTDOWN_SETTLE_MS);
    await settledWithin(reaping, SHUTDOWN_SETTLE_MS);
    await revocations?.close();
    await runner.close();
    // Its processes are gone: the range is free for another instance.
    identityClaim?.release();
    // After the runner: no run process is left that the table still has to hold.
    network.remove();
    generationSessions.close();
    // Last: the read models as the stop left them, so the next start replays (almost) nothing.
    await snapshots?.stop();
    await projections?.stop();
    await readStore.close();
    await eventStore.close();
    // The last spans are exported before the process ends (bounded: a collector that is gone must not hold the stop).
    if (tracing !== null) await settledWithin(tracing.shutdown(), SHUTDOWN_SETTLE_MS);
    await retention.stop();
    await logger.close();
  }
};

/** First start: the admin account, with ADMIN_PASSWORD or a random one shown once. */
const ensureAdmin = async (
  config: Config,
  deps: { users: Collection<UserDoc>; userCommands: UserHandler; readModels: ReadModelProgress; clock: Clock; announce(message: string): void },
): Promise<void> => {
  const existing = await deps.users.find({ where: { username_key: config.adminUsername.toLowerCase() }, limit: 1 });
  if (existing.length > 0) return;
  const password = config.adminPassword ?? randomBytes(12).toString('base64url');
  try {
    const created = await deps.userCommands.create(
      { username: config.adminUsername, email: config.adminEmail, password, mustChangePassword: config.adminPassword === null, isAdmin: true },
      metadataFor(null, deps.clock.now(), 'bootstrap'),
    );
    await deps.readModels.waitFor(created.position, config.readYourWritesTimeoutMs);
  } catch (error) {
    // Another process sharing this DATA_DIR created it first: that is fine.
    if (error instanceof AppError && error.status === 409) return;
    throw error;
  }
  if (config.adminPassword === null) {
    deps.announce(`Created admin user "${config.adminUsername}" with one-time password: ${password} (change it at first login)`);
  }
};
