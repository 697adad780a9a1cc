import { randomBytes } from 'node:crypto';
import { type Clock } from '../../shared/clock.ts';
import { metadataFor } from '../../shared/events.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import { AppError } from '../../shared/errors.ts';
import { authHandler } from '../../command-side/auth/handler.ts';
import { authRoutes } from '../../command-side/auth/routes.ts';
import { type UserHandler } from '../../command-side/user/handler.ts';
import { userCommandRoutes } from '../../command-side/user/routes.ts';
import { userQueryRoutes } from '../../query-side/user/routes.ts';
import { groupHandler } from '../../command-side/group/handler.ts';
import { groupCommandRoutes } from '../../command-side/group/routes.ts';
import { groupQueryRoutes } from '../../query-side/group/routes.ts';
import { catalogCommandRoutes } from '../../command-side/catalog/routes.ts';
import { catalogQueryRoutes } from '../../query-side/catalog/routes.ts';
import { taskRoutes } from '../../command-side/task/routes.ts';
import { actionRoutes } from '../../command-side/action/routes.ts';
import { cronRoutes } from '../../command-side/cron/routes.ts';
import { backfillRoutes } from '../../command-side/backfill/routes.ts';
import { activeBackfill } from '../../command-side/backfill/backfillCommands.ts';
import { diagnosisJournal } from '../../command-side/cron/diagnosisJournal.ts';
import { readyToRunRoutes } from '../../query-side/task/readyToRunRoutes.ts';
import { diagnoseRoutes } from '../../query-side/task/diagnoseRoutes.ts';
import { cronStatusRoutes } from '../../query-side/task/cronStatusRoutes.ts';
import type { UserDoc } from '../../shared/read-models/UserDoc.ts';
import type { ReadModelProgress } from '../../shared/read-store/ReadModelProgress.ts';
import type { Config } from '../config.ts';
import { consoleRoutes } from '../console/consoleRoutes.ts';
import { authenticate } from '../http/authenticate.ts';
import { findSessionLogFile } from '../logging/sessionLogFile.ts';
import { publicRouteGuard } from '../http/publicRouteGuard.ts';
import { logRoutes } from '../../query-side/logs/logRoutes.ts';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_POLL_MS } from '../../query-side/logs/streamSession.ts';
import { resolveRedirect } from '../auth/isAllowedRedirect.ts';
import { failureThrottle, loginThrottle, memoryLimiters, rateThrottle } from '../auth/rateLimiterThrottles.ts';
import { eventRoutes } from '../../query-side/events/routes.ts';
import { logQueries } from '../../query-side/logs/queryLogs.ts';
import { logsQueryRoutes } from '../../query-side/logs/queryRoute.ts';
import { EventStreams } from '../../query-side/events/EventStreams.ts';
import { queryRoutes } from '../../query-side/query/queryRoute.ts';
import { queryTargetFactory } from '../query/queryTargets.ts';
import { marketplaceRoutes } from '../../command-side/marketplace/routes.ts';
import { HttpMarketplace } from '../marketplace/HttpMarketplace.ts';
import { agentRoutes } from '../../command-side/ai/agent/agentRoutes.ts';
import { optionalCaller } from '../http/optionalCaller.ts';
import { mcpRoutes } from '../mcp/mcpRoutes.ts';
import { mcpToolbox } from '../mcp/mcpToolbox.ts';
import { loopbackServiceApi } from '../mcp/serviceApi.ts';
import { loadGuideTexts } from '../ai/guideTexts.ts';
import { TempGenerationSessions } from '../ai/TempGenerationSessions.ts';
import { optionalAuthentication } from '../http/optionalAuthentication.ts';
import { generateRoutes } from '../../command-side/ai/generateRoutes.ts';
import { apiReferenceRoutes } from '../http/apiReferenceRoutes.ts';

import type { Kernel } from './openKernel.ts';
import type { RolePart } from './RolePart.ts';

/**
 * The api role: every REST route (commands append, reads wait for the read models), no background
 * work but the admin account's first creation. `ownUrl` is the service's own address once it
 * listens (the MCP tools call it); `isReady` what health says.
 */
export const apiRoot = (k: Kernel, ownUrl: () => string, isReady: () => boolean): RolePart => {
  const { config, clock, logger, logsRoot, secrets, tokens, passwords, mailer, eventStore, asOf, readStore, readModels, users, endedSessions, userCommands, items, links, access, runner, limits, taskDeps, workerDeps, slots, liveness, cronDeps, cron, backfills, backfill, logStreams, aiModule, aiTimeoutMs, parts } = k;
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
  const logsQuery = logsQueryRoutes({ queries: logQueries({ logsRoot, settings: config.logQuery }), guard: publicGuard, flushLogs: () => logger.flush() });
  // The MCP server's tools call the REST routes on the service's own address (known once it listens).
  const mcp = mcpRoutes({ api: loopbackServiceApi(ownUrl) });
  const generationSessions = new TempGenerationSessions();
  // What the catalog's writers (the agent's tools, the marketplace's installs) are handed.
  const catalogPorts = { eventStore, items, links, access, clock, secrets, logger, readModels, readYourWritesTimeoutMs: config.readYourWritesTimeoutMs };

  const publicRoutes = [
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
      ...catalogPorts,
      aiModule,
      openTools: mcpToolbox({ ownUrl, ...config.mcp }),
      guard: publicGuard,
      identify: optionalCaller(accessCookieAuth),
    }),
    // The web console (ops/console): its page at / and /console/*, its assets; the API is unchanged.
    consoleRoutes(),
  ];
  const privateRoutes = [
    taskRoutes({ ...taskDeps, readModels, readYourWritesTimeoutMs: config.readYourWritesTimeoutMs }),
    actionRoutes({ ...taskDeps, runner, limits: workerDeps.limits, readModels, readYourWritesTimeoutMs: config.readYourWritesTimeoutMs }),
    catalogQueryRoutes({ items, links, access, eventStore, asOf }),
    cronRoutes({ ...cronDeps, scheduler: cron, readModels, readYourWritesTimeoutMs: config.readYourWritesTimeoutMs }),
    backfillRoutes({ eventStore, items, access, clock, registry: backfills, readModels, readYourWritesTimeoutMs: config.readYourWritesTimeoutMs, wake: () => backfill.wake() }),
    cronStatusRoutes({ items, access, clock, liveness }),
    readyToRunRoutes({ items, access, clock }),
    diagnoseRoutes({
      items,
      access,
      clock,
      liveness,
      journal: diagnosisJournal(eventStore),
      backfillOf: (laui) => activeBackfill(eventStore, laui),
      // Workers subscribe before the service is ready and leave when it closes.
      workers: {
        heartbeat: (laui) => workerDeps.heartbeats.last(laui),
        running: isReady,
        broker: config.bus.kind === 'kafka' ? `Kafka (${config.bus.brokers.join(', ')})` : 'in-process bus',
        // The wait of a run for a slot of this process's worker (none in a role without one).
        slotWait: (laui) => (parts.worker ? slots.waitOf(laui) : null),
      },
    }),
    catalogCommandRoutes({ eventStore, items, links, access, clock, secrets, readModels, readYourWritesTimeoutMs: config.readYourWritesTimeoutMs }),
    userQueryRoutes({ users, secrets }),
    marketplaceRoutes({
      ...catalogPorts,
      users,
      marketplace: config.marketplace.url === null ? null : new HttpMarketplace({ ...config.marketplace, url: config.marketplace.url }),
    }),
    eventRoutes({ eventStore, streams: eventStreams, chain: k.chain, signingPublicKeyPem: k.eventSigningPublicKeyPem }),
    userCommandRoutes({ users: userCommands, passwordChangeThrottle: throttles.passwordChange, clock, readModels, readYourWritesTimeoutMs: config.readYourWritesTimeoutMs }),
    groupQueryRoutes({ readStore }),
    groupCommandRoutes({
      groups: groupHandler({ eventStore, readStore }),
      clock,
      readModels,
      readYourWritesTimeoutMs: config.readYourWritesTimeoutMs,
    }),
    mcp,
  ];
  return {
    routes: { publicRoutes, bodyErrorRoutes: [logsQuery, mcp], privateRoutes },
    start: () => ensureAdmin(config, { users, userCommands, readModels, clock, announce: k.announce }),
    // Open SSE streams would keep server.close() waiting for ever.
    stopTaking: () => {
      eventStreams.closeAll();
      logStreams.closeAll();
    },
    close: async () => generationSessions.close(),
  };
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
