import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { chmodSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import { systemClock, type Clock } from '../../shared/clock.ts';
import type { EventStore } from '../../shared/event-store/EventStore.ts';
import type { ReadStore } from '../../shared/read-store/ReadStore.ts';
import type { MessageBus } from '../../shared/bus/MessageBus.ts';
import type { Mailer } from '../../shared/ports/Mailer.ts';
import type { PasswordHasher } from '../../shared/ports/PasswordHasher.ts';
import { userHandler } from '../../command-side/user/handler.ts';
import { groupsProjection } from '../../projections/groups/groupsProjection.ts';
import { groupMembersProjection } from '../../projections/groups/groupMembersProjection.ts';
import { ProjectionRunner } from '../../projections/runner/ProjectionRunner.ts';
import { ITEMS, itemsProjection } from '../../projections/catalog/itemsProjection.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { LINKS, linksProjection } from '../../projections/catalog/linksProjection.ts';
import type { LinkDoc } from '../../shared/read-models/LinkDoc.ts';
import { createAccessControl } from '../../projections/catalog/accessControl.ts';
import { groupsOfPrincipal } from '../../projections/groups/groupsOfPrincipal.ts';
import { queueMetricsProjection } from '../../projections/catalog/queueMetricsProjection.ts';
import { queueHandler } from '../../command-side/queue/handler.ts';
import { type WorkerDeps } from '../../command-side/task/executeTask.ts';
import { HeartbeatStore } from '../../command-side/task/HeartbeatStore.ts';
import { RelayedHeartbeats } from '../liveness/RelayedHeartbeats.ts';
import { WorkerSlots, type SlotPolicy } from '../../command-side/task/WorkerSlots.ts';
import { type TaskDeps } from '../../command-side/task/taskDeps.ts';
import { ProcessCodeRunner } from '../worker/ProcessCodeRunner.ts';
import { followReuseRevocations } from '../../command-side/task/reuseRevocation.ts';
import { cronLiveness } from '../../projections/cron/cronLiveness.ts';
import { busCronOwnership, createCronScheduler } from '../../command-side/cron/cronScheduler.ts';
import { backfillRegistry } from '../../command-side/backfill/backfillRegistry.ts';
import { backfillDriver } from '../../command-side/backfill/backfillDriver.ts';
import { USERS, usersProjection } from '../../projections/users/usersProjection.ts';
import type { UserDoc } from '../../shared/read-models/UserDoc.ts';
import { ENDED_SESSIONS, endedSessionsProjection } from '../../projections/sessions/endedSessionsProjection.ts';
import type { EndedSessionDoc } from '../../shared/read-models/EndedSessionDoc.ts';
import { MemoryReadStore } from '../../projections/read-store/MemoryReadStore.ts';
import { CheckpointProgress } from '../../projections/runner/CheckpointProgress.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import type { Config } from '../config.ts';
import { roleParts } from '../roles.ts';
import { openEventStore } from '../event-store/openEventStore.ts';
import { SqliteEventStore } from '../event-store/sqlite/SqliteEventStore.ts';
import { startCheckpointSigner } from '../event-store/chain/CheckpointSigner.ts';
import { InProcessBus } from '../bus/InProcessBus.ts';
import { kafkaClientSecurity, kafkaSecurityWarning } from '../bus/kafka/kafkaSecurity.ts';
import { prefixedBus } from '../bus/prefixedBus.ts';
import { JsonLinesLogger } from '../logging/JsonLinesLogger.ts';
import { LogStreams } from '../../query-side/logs/LogStreams.ts';
import { startLogRetention } from '../logging/logRetention.ts';
import { createMailer } from '../mail/createMailer.ts';
import { loadKeys } from '../keys/loadKeys.ts';
import { AesSecretBox } from '../keys/AesSecretBox.ts';
import { JoseTokenSigner } from '../auth/JoseTokenSigner.ts';
import { scryptPasswords } from '../auth/scryptPasswords.ts';
import { secureDataDir } from '../secureDataDir.ts';
import { nodeForkAddonLoads } from '../worker/nodeForkProgram.ts';
import { decideSandbox, probeBwrap, resolvePython } from '../worker/sandbox.ts';
import { claimRunIdentities } from '../worker/runIdentityRegistry.ts';
import { serviceHosts, startNetworkPolicy } from '../worker/networkPolicy.ts';
import type { AiModule } from '../../shared/ports/AiModule.ts';
import { createAiModule } from '../ai/createAiModule.ts';
import { recordWritePositions, WritePositions } from '../http/readYourWrites.ts';
import { ServiceTracing } from '../tracing/ServiceTracing.ts';
import { serviceVersion } from '../serviceVersion.ts';
import { settledWithin } from '../shutdown/gracefulStop.ts';
import { ServiceMetrics } from '../metrics/ServiceMetrics.ts';
import { timedAppends } from '../metrics/timedAppends.ts';
import { projectionLag } from '../metrics/projectionLag.ts';
import { CHECKPOINTS, checkpointPosition } from '../../projections/runner/checkpoints.ts';
import { ItemAsOfReader } from '../../query-side/catalog/ItemAsOfReader.ts';
import { foldCheckpointsFile, foldOrigin, SqliteFoldCheckpoints } from '../snapshots/SqliteFoldCheckpoints.ts';

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

/** After the grace period: how long stopped runs get to record their ends, and the bus its handlers. */
export const SHUTDOWN_SETTLE_MS = 15_000;

/** The checkpoint name of the projector writing a shared (MongoDB) read store. */
export const PROJECTOR = 'projector';

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
 * What every role of a process shares (the composition root's kernel): keys, the event store, the
 * read store and its projections, the bus, the code runner, the task and worker ports. The roles
 * (ops/roots/*Root.ts) start their own parts on it; ops/service.ts puts them together.
 */
export const openKernel = async (config: Config, overrides: ServiceOverrides) => {
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
  const tokens = new JoseTokenSigner(keys.jwtPrivateKey, keys.jwtPublicKey, clock, keys.workerTokenSecret);
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
  const tracing = config.tracing === null ? null : await ServiceTracing.open({ ...config.tracing, serviceVersion: serviceVersion() });
  // Commits of the embedded store run on a writer thread: a writer (or a KurrentDB) that cannot start fails the start.
  const store = await openEventStore(config);
  // Every append is recorded against the request it serves (writes answer X-Event-Position) and timed.
  const writePositions = new WritePositions();
  const eventStore: EventStore = recordWritePositions(timedAppends(overrides.eventStoreView ? overrides.eventStoreView(store) : store, (seconds) => metrics.observeAppend(seconds)), writePositions);
  // The log's hash chain: SQLite's writer keeps one; KurrentDB's log has none (docs/decisions.md).
  const chain = store instanceof SqliteEventStore ? store.chain : null;
  const checkpointSigner =
    chain === null || config.eventCheckpointEvery === 0
      ? null
      : await startCheckpointSigner({
          store,
          chain,
          key: keys.eventSigningKey,
          every: config.eventCheckpointEvery,
          clock,
          onError: (error) => logger.log({ level: 'error', category: 'API', message: `Signing a checkpoint of the event log failed: ${String(error)}` }),
        });
  // The MongoDB and Kafka adapters are imported only when configured: their drivers (mongodb,
  // kafkajs) would otherwise load at every embedded start, which uses neither.
  const readStore: ReadStore =
    config.readStore.kind === 'mongodb'
      ? await (await import('../read-store/mongodb/MongoReadStore.ts')).openMongoReadStore({ url: config.readStore.url, database: config.readStore.database })
      : new MemoryReadStore();
  // The embedded bus: its messages live in this process, so the reaper can ask it whether a run's
  // message is still there (judgeLease).
  let inProcessBus: InProcessBus | null = null;
  const bus: MessageBus =
    config.bus.kind === 'kafka'
      ? prefixedBus(
          new (await import('../bus/kafka/KafkaBus.ts')).KafkaBus({
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
  // As-of reads (issue 36): fold snapshots kept in DATA_DIR, folded in the background as the log grows.
  const foldCheckpoints = parts.api ? new SqliteFoldCheckpoints({ file: foldCheckpointsFile(config.dataDir), origin: () => foldOrigin(eventStore) }) : null;
  const asOf = new ItemAsOfReader(eventStore, {
    ...(foldCheckpoints ? { checkpoints: foldCheckpoints } : {}),
    onCacheError: (error) => logger.log({ level: 'warning', category: 'API', message: `As-of snapshots: ${String(error)}` }),
  });
  const projections = !parts.projects ? null : new ProjectionRunner({
    name: config.readStore.kind === 'mongodb' ? PROJECTOR : 'embedded',
    eventStore,
    readStore,
    projections: [usersProjection, endedSessionsProjection, groupsProjection, groupMembersProjection, itemsProjection, linksProjection, queueMetricsProjection],
    ...(parts.api ? { followers: [asOf] } : {}),
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
    pickupCommitDeferMs: config.workerPickupCommitDeferMs,
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
  // Backfills (issue 36): requested through the api, driven by the scheduler role.
  const backfills = backfillRegistry(eventStore);
  const backfill = backfillDriver({ ...taskDeps, registry: backfills });

  const logStreams = new LogStreams(config.logStreams);
  // AI (spec 4.11): the chats' module (the chat's own code in the sandbox, else the built-in one).
  const aiTimeoutMs = config.ai.timeoutSeconds * 1000;
  const aiModule: AiModule = overrides.aiModule ?? createAiModule({ runner, logger, clock, timeoutMs: aiTimeoutMs, maxRetries: config.ai.maxRetries, limits });
  // Every role but the projector reads beats (the reaper, diagnose) or sends them (workers); every
  // role that runs code (api: /action/run and hooks, worker, scheduler: pre-actions) follows the
  // log's rights changes: reuse processes die with their owner's rights (command-side/task/reuseRevocation.ts).
  const runsCode = parts.api || parts.worker || parts.scheduler;
  let revocations: { close(): Promise<void> } | null = null;
  /** Once the read models are current, before any run can start. */
  const startRunning = async (): Promise<void> => {
    if (!runsCode) return;
    await relayedHeartbeats?.start(`${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`);
    revocations = await followReuseRevocations({
      eventStore,
      logger,
      runner,
      parentOf: async (laui) => (await items.peek(laui))?.parent_laui ?? null,
      groupsOf: (laui) => groupsOfPrincipal(readStore, laui),
    });
  };
  /** After the roles' grace: the bus (waiting for its handlers, bounded), the runner and what it held. */
  const closeWork = async (): Promise<void> => {
    await relayedHeartbeats?.close();
    // The bus waits for its handlers: one that did not end even after its run was stopped is
    // abandoned (gracefulStop said so), not waited for without end.
    await settledWithin(bus.close(), SHUTDOWN_SETTLE_MS);
    await revocations?.close();
    await runner.close();
    // Its processes are gone: the range is free for another instance.
    identityClaim?.release();
    // After the runner: no run process is left that the table still has to hold.
    network.remove();
  };
  /** Last: the stores, the traces' export and the logs. */
  const closeStores = async (): Promise<void> => {
    await asOf.stop();
    foldCheckpoints?.close();
    await readStore.close();
    await checkpointSigner?.close();
    await eventStore.close();
    // The last spans are exported before the process ends (bounded: a collector that is gone must not hold the stop).
    if (tracing !== null) await settledWithin(tracing.shutdown(), SHUTDOWN_SETTLE_MS);
    await retention.stop();
    await logger.close();
  };
  return { startRunning, closeWork, closeStores, parts, config, clock, announce, kafkaSecurity, identityClaim, network, logsRoot, logger, retention, secrets, tokens, passwords, mailer, metrics, tracing, writePositions, eventStore, asOf, chain, eventSigningPublicKeyPem: keys.eventSigningPublicKeyPem, readStore, inProcessBus, bus, projections, readModels, users, endedSessions, userCommands, items, links, access, runner, limits, taskDeps, relayedHeartbeats, stopping, slots, workerDeps, liveness, cronDeps, cron, backfills, backfill, logStreams, aiModule, aiTimeoutMs };
};

export type Kernel = Awaited<ReturnType<typeof openKernel>>;
