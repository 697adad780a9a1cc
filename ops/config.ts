import { tracingConfigFrom, type TracingConfig } from './tracing/tracingConfig.ts';
import { isIP } from 'node:net';
import { isAbsolute, join, resolve } from 'node:path';
import type { LoginThrottleSettings } from './auth/rateLimiterThrottles.ts';
import type { LogQuerySettings } from '../query-side/logs/queryLogs.ts';
import type { QuerySettings } from '../query-side/query/queryRoute.ts';
import { DEFAULT_RUN_IDENTITY_REGISTRY } from './worker/runIdentityRegistry.ts';
import type { StreamShareSettings } from '../shared/http/StreamShares.ts';
import { DEFAULT_LOG_STREAM_SHARES } from '../query-side/logs/LogStreams.ts';
import { DEFAULT_EVENT_STREAM_SHARES } from '../query-side/events/EventStreams.ts';

/**
 * Every setting comes from the environment; the README's configuration table lists them all.
 * Parsing is strict: a malformed value stops the start with a message naming the variable.
 */
/** What one process runs (`npm start -- --role X`, or ROLE): see ops/roles.ts. */
export const ROLES = ['all', 'api', 'projector', 'worker', 'scheduler'] as const;
export type Role = (typeof ROLES)[number];

/** Where the log lives: the SQLite file in DATA_DIR (embedded), or EventStoreDB/KurrentDB (EVENTSTORE_URL). */
export type EventStoreConfig = { kind: 'sqlite' } | { kind: 'kurrentdb'; connectionString: string };

/** Where the read models live: this process's memory (embedded), or MongoDB (MONGO_URL, MONGO_DATABASE). */
export type ReadStoreConfig = { kind: 'memory' } | { kind: 'mongodb'; url: string; database: string };

export interface Config {
  /** ROLE (or `--role`): which parts of the service this process runs; `all` in the embedded mode. */
  role: Role;
  eventStore: EventStoreConfig;
  readStore: ReadStoreConfig;
  /**
   * READ_MODELS_REBUILD: a projecting process (projector, all) replays the whole log into fresh
   * read models after it started and swaps them in, serving the live ones meanwhile; for a shared
   * (MongoDB) store after a projection changed. The memory store is rebuilt at every start anyway.
   */
  rebuildReadModels: boolean;
  /**
   * SNAPSHOT_INTERVAL_EVENTS: the embedded read models are snapshotted to DATA_DIR/snapshots once
   * they are this many events past the last snapshot, and at a graceful stop; a start loads the
   * newest and replays only what follows (ops/snapshots). 0: no snapshots (every start replays the log).
   */
  snapshotIntervalEvents: number;
  port: number;
  host: string;
  /**
   * GET /metrics (ops/metrics): METRICS_TOKEN, a Bearer that reads them without an account;
   * METRICS_PORT, a loopback port serving them apart from the API (0: any free port), null: on PORT.
   */
  metrics: { token: string | null; port: number | null };
  /** OpenTelemetry traces (ops/tracing): the standard OTEL_* variables; null (off) without an OTLP endpoint. */
  tracing: TracingConfig | null;
  dataDir: string;
  adminUsername: string;
  adminPassword: string | null;
  adminEmail: string;
  jwtPrivateKeyPem: string | null;
  jwtPublicKeyPem: string | null;
  encryptionKey: string | null;
  emailTotp: boolean;
  /** How mail leaves the service (SMTP_URL, MAIL_FROM, MAIL_TRANSPORT): sign-in codes when emailTotp is on. */
  mail: MailConfig;
  sqliteSynchronous: 'full' | 'normal';
  bodyLimit: string;
  cookieSecure: boolean;
  readYourWritesTimeoutMs: number;
  logToConsole: boolean;
  /** The logs root (LOG_DIR; default DATA_DIR/logs): a folder per category, sessions/ for the session files. */
  logDir: string;
  /** Day files and session files older than this many days are removed (at start, then daily). */
  logRetentionDays: number;
  /** How much of one run's output its session logs (LOG_RUN_MAX_LINES, LOG_RUN_MAX_BYTES, LOG_LINE_MAX_BYTES). */
  runOutput: { maxLines: number; maxBytes: number; maxLineBytes: number };
  /** Origins (scheme://host[:port]) a login client's redirect_uri may use; loopback is always allowed. */
  allowedRedirectOrigins: ReadonlyArray<string>;
  /** Operator runs a worker process executes at once. */
  workerConcurrency: number;
  workerPollIntervalMs: number;
  /** How long a run's pick-up waits to be committed with its end (WORKER_PICKUP_COMMIT_DEFER_MS; 0: at once). */
  workerPickupCommitDeferMs: number;
  workerMemoryMb: number;
  workerTimeoutSeconds: number;
  workerMaxOutputBytes: number;
  /** Warm interpreter processes per language, started ahead of demand. */
  workerPoolSize: number;
  /** Fork JavaScript runtime processes from a node fork server (needs the nodefork addon). */
  workerNodeFork: boolean;
  /** Runs one reuse process serves before it is replaced (WORKER_REUSE_MAX_RUNS). */
  workerReuseMaxRuns: number;
  /**
   * Limits of each run's sandbox (as root; ops/worker/runSandbox.ts): its tmpfs (WORKER_DISK_MB: its
   * directory, /tmp, /var/tmp), its shared memory (WORKER_SHM_MB), its processes and threads
   * (WORKER_MAX_PROCESSES) and its CPU weight (WORKER_CPU_WEIGHT, 100 = an even share).
   */
  workerDiskMb: number;
  workerShmMb: number;
  workerMaxProcesses: number;
  workerCpuWeight: number;
  /** Idle reuse processes kept in all (every scope's together; WORKER_REUSE_MAX_IDLE, default 2 x WORKER_CONCURRENCY). */
  workerReuseMaxIdle: number;
  reaperIntervalMs: number;
  /**
   * SIGINT/SIGTERM: how long the work already taken (runs, HTTP requests, the scheduler's pass) may go
   * on before its runs are killed and their tasks end `error` (ops/shutdown/gracefulStop.ts).
   */
  shutdownGraceSeconds: number;
  /** Length of one SLA minute for running actions: 60,000 in production, shorter for drills and tests. */
  slaMinuteMs: number;
  /**
   * Run operator and action code as these unprivileged identities (`count` consecutive uid/gid
   * pairs from uid/gid, one per live process), or null when none is configured: then a service
   * running as root uses 64000-64999 (ops/worker/sandbox.ts, decideSandbox).
   */
  workerRunAs: { uid: number; gid: number; count: number } | null;
  /**
   * WORKER_RUN_AS_REGISTRY: the host-wide directory in which live instances running as root claim
   * their identity ranges (ops/worker/runIdentityRegistry.ts); an instance whose range overlaps a
   * live one's refuses to start.
   */
  workerRunAsRegistry: string;
  /**
   * WORKER_SANDBOX: `auto` (default: see decideSandbox), `bwrap` (bubblewrap required: the service
   * fails at start without it) or `none` (code runs with the service's rights; warned at every start).
   */
  workerSandbox: 'auto' | 'none' | 'bwrap';
  /**
   * WORKER_PYTHON: the Python interpreter of the runs, an absolute path (checked at start: an
   * executable only root or the service's user can change), or null: the first python3 in the
   * system directories (ops/worker/systemPrograms.ts). Never looked up on PATH.
   */
  workerPython: string | null;
  /** WORKER_NETWORK and WORKER_NETWORK_DENY: what run processes may connect to (ops/worker/networkPolicy.ts). */
  workerNetwork: WorkerNetworkConfig;
  /** The message bus: in the process (embedded mode) or Kafka (distributed mode). */
  bus: BusConfig;
  /**
   * Reverse proxies in front of the service (TRUST_PROXY_HOPS): with n > 0 the client address is
   * the one the n-th proxy from the service saw (X-Forwarded-For, right to left) and the protocol is
   * X-Forwarded-Proto; with 0 those headers are ignored and the address is the socket's peer.
   */
  trustProxyHops: number;
  /** Brute-force limits on credential checks; see ops/auth/rateLimiterThrottles.ts. */
  throttle: ThrottleConfig;
  /**
   * GET /api/v1/events/stream: heartbeat comment interval, how long a full socket is tolerated, and
   * the streams open at once and per user (EVENTS_STREAMS_*).
   */
  eventStream: { heartbeatMs: number; slowClientMs: number; shares: { total: number; perUser: number } };
  /** EVENTS_CHECKPOINT_EVERY: the hash chain's head is signed every this many events (0: never). SQLite only. */
  eventCheckpointEvery: number;
  /** The logs routes' SSE streams (LOG_STREAMS_*): at once, per user, per anonymous address, all anonymous ones. */
  logStreams: StreamShareSettings;
  /** POST /api/v1/logs/query: DuckDB's limits per query (query-side/logs/queryLogs.ts). */
  logQuery: LogQuerySettings;
  /**
   * PUBLIC_ROUTES_REQUIRE_AUTH: the routes spec 5.1 makes public (logs, and later AI) take a Bearer
   * token or the frontend_token cookie instead. Off by default (the spec); on for shared deployments.
   */
  publicRoutesRequireAuth: boolean;
  /** GET /logs/session/{id}: a followed session with no new line this long ends with `done`. */
  logFollowIdleSeconds: number;
  /** POST /api/v1/query/execute: limits per query (spec 8; query-side/query/queryRoute.ts). */
  query: QuerySettings;
  /** POST /api/v1/marketplace/import (spec 4.8): where items are fetched from, and the fetch's limits. */
  marketplace: MarketplaceConfig;
  /** The agent's MCP tools (ops/mcp/mcpToolbox.ts). */
  mcp: McpSettings;
  /**
   * The AI module of a chat (/ai/generate, /ai/agent): one invocation's budget (AI_TIMEOUT_SECONDS:
   * the built-in module's call with its retries, or a chat's own module's run) and the built-in
   * module's retries of a failed call (AI_MAX_RETRIES).
   */
  ai: { timeoutSeconds: number; maxRetries: number };
}

/**
 * WORKER_NETWORK: `restricted` (default): run processes reach every destination but this host
 * (loopback and all its addresses), link-local addresses (cloud metadata), the service's own stores
 * and broker and the `deny` CIDRs; `none`: no network at all; `host`: no restriction (warned).
 */
export const WORKER_NETWORK_MODES = ['restricted', 'none', 'host'] as const;
export type WorkerNetworkMode = (typeof WORKER_NETWORK_MODES)[number];

export interface WorkerNetworkConfig {
  mode: WorkerNetworkMode;
  /** WORKER_NETWORK_DENY: CIDRs (IPv4 or IPv6, `address/prefix`; a bare address is /32 or /128) run processes may not reach. */
  deny: ReadonlyArray<string>;
}

/** One CIDR of WORKER_NETWORK_DENY as `address/prefix`, or null when it is not one. */
export const parseCidr = (raw: string): string | null => {
  const [address = '', prefix, ...rest] = raw.trim().split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0 || address.includes('%')) return null;
  const bits = family === 4 ? 32 : 128;
  if (prefix === undefined) return `${address}/${bits}`;
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > bits) return null;
  return `${address}/${Number(prefix)}`;
};

const workerNetwork = (env: NodeJS.ProcessEnv): WorkerNetworkConfig => {
  const raw = (text(env, 'WORKER_NETWORK') ?? 'restricted').trim().toLowerCase();
  if (!(WORKER_NETWORK_MODES as ReadonlyArray<string>).includes(raw)) {
    throw new Error(`WORKER_NETWORK must be restricted, none or host, got "${env.WORKER_NETWORK}"`);
  }
  const deny: string[] = [];
  for (const entry of (text(env, 'WORKER_NETWORK_DENY') ?? '').split(',')) {
    if (entry.trim() === '') continue;
    const cidr = parseCidr(entry);
    if (cidr === null) throw new Error(`WORKER_NETWORK_DENY must be comma-separated CIDRs (10.0.0.0/8, fd00::/8, 192.0.2.7), got "${entry.trim()}"`);
    deny.push(cidr);
  }
  return { mode: raw as WorkerNetworkMode, deny };
};

export interface MarketplaceConfig {
  /** MARKETPLACE_URL: base URL of a service speaking this API, without trailing slash; null when unset (imports answer 500). */
  url: string | null;
  /** DNS, TCP and TLS handshake: the spec's 10 s (not a setting). */
  connectTimeoutMs: number;
  /** MARKETPLACE_TIMEOUT_SECONDS: the whole fetch, request to last byte (default 30). */
  timeoutMs: number;
  /** MARKETPLACE_MAX_BYTES: the largest answer read (default 5 MiB); larger is refused unread. */
  maxBytes: number;
}

export interface McpSettings {
  /** MCP_SERVER_URL: the MCP server the agent lists and calls tools on; null: the service's own /mcp. */
  serverUrl: string | null;
  /** MCP_SERVER_TOKEN: Bearer token sent to MCP_SERVER_URL (the caller's own token never leaves the service). */
  serverToken: string | null;
  /** MCP_TOOL_TIMEOUT_SECONDS: one agent tool call's bound (POST /query/execute alone may take 2 minutes). */
  toolTimeoutMs: number;
}

const mcpSettings = (env: NodeJS.ProcessEnv): McpSettings => {
  const serverUrl = text(env, 'MCP_SERVER_URL');
  if (serverUrl !== null) {
    let protocol = '';
    try {
      protocol = new URL(serverUrl).protocol;
    } catch {
      // Reported below.
    }
    if (protocol !== 'http:' && protocol !== 'https:') throw new Error(`MCP_SERVER_URL must be an http(s) URL, got "${serverUrl}"`);
  }
  return { serverUrl, serverToken: text(env, 'MCP_SERVER_TOKEN'), toolTimeoutMs: integer(env, 'MCP_TOOL_TIMEOUT_SECONDS', 150, 1, 3600) * 1000 };
};

/**
 * MAIL_TRANSPORT: `smtp` (the default when SMTP_URL is set) hands mail to that server; `log`
 * writes it to the API log (ops/mail/LogMailer.ts; trials on one machine: the sign-in codes end up
 * in the log); `none` (no SMTP_URL, no MAIL_TRANSPORT): nothing is ever mailed, which EMAIL_TOTP
 * refuses at start.
 */
export type MailConfig = { transport: 'none' } | { transport: 'log' } | { transport: 'smtp'; smtp: SmtpSettings; from: string };

export interface SmtpSettings {
  /** smtps://: TLS from the first byte (implicit TLS, port 465 by default); smtp://: STARTTLS when offered (587). */
  secure: boolean;
  host: string;
  port: number;
  /** From SMTP_URL's user:password@ or from SMTP_USER/SMTP_PASSWORD; null: the server takes mail without login. */
  auth: { user: string; pass: string } | null;
  /** SMTP_TIMEOUT_SECONDS: the bound of one mail, from connecting to the server's answer to the message. */
  timeoutMs: number;
}

/** The scheme and server of an SMTP_URL, for messages: never its credentials. */
const smtpServerOf = (url: URL): string => `${url.protocol}//${url.host}`;

/** `name@domain`, optionally as `Display Name <name@domain>`; no line breaks (a header of every mail). */
const MAIL_ADDRESS = /^(?:[^\r\n<>@]*<[^\s<>@]+@[^\s<>@]+>|[^\s<>@]+@[^\s<>@]+)$/;

/**
 * SMTP_URL, SMTP_USER/SMTP_PASSWORD, MAIL_FROM, SMTP_TIMEOUT_SECONDS and MAIL_TRANSPORT. Messages
 * never quote SMTP_URL or SMTP_PASSWORD whole: they may hold a password. Options in the URL's query
 * are refused rather than silently dropped: every setting here is a variable of its own.
 */
const mailConfig = (env: NodeJS.ProcessEnv, emailTotp: boolean): MailConfig => {
  const raw = text(env, 'SMTP_URL');
  const chosen = text(env, 'MAIL_TRANSPORT')?.trim().toLowerCase() ?? null;
  if (chosen !== null && chosen !== 'smtp' && chosen !== 'log') throw new Error(`MAIL_TRANSPORT must be smtp or log, got "${env.MAIL_TRANSPORT}"`);
  const transport = chosen ?? (raw === null ? 'none' : 'smtp');
  const user = text(env, 'SMTP_USER');
  const password = text(env, 'SMTP_PASSWORD');
  if (raw === null) {
    for (const name of ['SMTP_USER', 'SMTP_PASSWORD', 'MAIL_FROM']) {
      if (text(env, name) !== null) throw new Error(`${name} needs SMTP_URL (smtp://host:587 or smtps://host:465)`);
    }
    if (transport === 'smtp') throw new Error('MAIL_TRANSPORT=smtp needs SMTP_URL (smtp://host:587 or smtps://host:465)');
    if (transport === 'log') return { transport };
    if (emailTotp) {
      throw new Error(
        'EMAIL_TOTP=true sends sign-in codes by mail, and no mail server is set: set SMTP_URL (smtp://host:587 or smtps://host:465; ' +
          'credentials in the URL or in SMTP_USER and SMTP_PASSWORD) and MAIL_FROM, or MAIL_TRANSPORT=log to write the codes to the service log (trials on one machine only)',
      );
    }
    return { transport: 'none' };
  }
  if (transport !== 'smtp') throw new Error(`MAIL_TRANSPORT=${transport} and SMTP_URL exclude each other: unset one of them`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error('SMTP_URL must be an smtp:// or smtps:// URL (smtp://host:587, smtps://user:password@host:465)');
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') throw new Error(`SMTP_URL must start with smtp:// or smtps://, got ${url.protocol}//`);
  if (url.hostname === '') throw new Error('SMTP_URL must name the mail server (smtp://host:587)');
  if ((url.pathname !== '' && url.pathname !== '/') || url.search !== '' || url.hash !== '') {
    throw new Error(`SMTP_URL must be ${smtpServerOf(url)} alone, without a path, query or fragment (each mail setting is a variable of its own)`);
  }
  if (url.port === '0') throw new Error(`SMTP_URL must name a port between 1 and 65535, got ${smtpServerOf(url)}`);
  const inUrl = url.username !== '' || url.password !== '';
  if (inUrl && (user !== null || password !== null)) {
    throw new Error('SMTP credentials are given twice: in SMTP_URL (user:password@) and in SMTP_USER/SMTP_PASSWORD; keep one');
  }
  const decode = (part: string): string => {
    try {
      return decodeURIComponent(part);
    } catch {
      throw new Error('SMTP_URL credentials must be percent-encoded (user:password@; %40 for @, %3A for :)');
    }
  };
  const login = inUrl ? { user: decode(url.username), pass: decode(url.password) } : user !== null || password !== null ? { user: user ?? '', pass: password ?? '' } : null;
  if (login !== null && (login.user === '' || login.pass === '')) {
    throw new Error(inUrl ? 'SMTP_URL credentials need both a user and a password (smtps://user:password@host)' : 'SMTP_USER and SMTP_PASSWORD must be given together');
  }
  const from = text(env, 'MAIL_FROM');
  if (from === null) throw new Error('MAIL_FROM must name the sender of the mails sent through SMTP_URL (for example orchestrator@example.com)');
  if (!MAIL_ADDRESS.test(from.trim())) throw new Error(`MAIL_FROM must be an address (name@example.com or "Name <name@example.com>"), got "${from}"`);
  const secure = url.protocol === 'smtps:';
  return {
    transport,
    from: from.trim(),
    smtp: {
      secure,
      // URL keeps an IPv6 literal's brackets; a socket wants the bare address.
      host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port === '' ? (secure ? 465 : 587) : Number(url.port),
      auth: login,
      timeoutMs: integer(env, 'SMTP_TIMEOUT_SECONDS', 10, 1, 300) * 1000,
    },
  };
};

export interface ThrottleConfig {
  login: LoginThrottleSettings;
  /** Failed code and refresh-token grants per client address within the login window. */
  tokenMaxFailuresPerAddress: number;
  /** Consecutive wrong current passwords per user on change-password before a (growing) block. */
  passwordChangeMaxFailures: number;
  /** Sign-in mails to one address per hour (MAIL_MAX_PER_ADDRESS_PER_HOUR): an inbox is not flooded through the service. */
  mailsPerAddressPerHour: number;
}

const throttleConfig = (env: NodeJS.ProcessEnv): ThrottleConfig => {
  const windowSeconds = integer(env, 'LOGIN_FAILURE_WINDOW_SECONDS', 15 * 60, 1, 7 * 24 * 3600);
  const blockSeconds = integer(env, 'LOGIN_BLOCK_SECONDS', 60, 1, 7 * 24 * 3600);
  const maxBlockSeconds = integer(env, 'LOGIN_MAX_BLOCK_SECONDS', 3600, 1, 7 * 24 * 3600);
  if (maxBlockSeconds < blockSeconds) throw new Error(`LOGIN_MAX_BLOCK_SECONDS must be at least LOGIN_BLOCK_SECONDS (${blockSeconds}), got ${maxBlockSeconds}`);
  const growing = { windowSeconds, blockSeconds, maxBlockSeconds };
  return {
    login: {
      perUserAddress: { ...growing, maxFailures: integer(env, 'LOGIN_MAX_FAILURES', 5, 1, 1_000_000) },
      maxFailuresPerAddress: integer(env, 'LOGIN_MAX_FAILURES_PER_ADDRESS', 50, 1, 1_000_000_000),
      maxFailuresPerUsername: integer(env, 'LOGIN_MAX_FAILURES_PER_USERNAME', 500, 1, 1_000_000_000),
      // At most 24 days: the in-memory limiter expires keys with a timer, and Node's timers hold 24.8 days.
      knownAddressSeconds: integer(env, 'LOGIN_KNOWN_ADDRESS_DAYS', 14, 1, 24) * 24 * 3600,
    },
    tokenMaxFailuresPerAddress: integer(env, 'TOKEN_MAX_FAILURES_PER_ADDRESS', 100, 1, 1_000_000_000),
    passwordChangeMaxFailures: integer(env, 'PASSWORD_CHANGE_MAX_FAILURES', 5, 1, 1_000_000),
    mailsPerAddressPerHour: integer(env, 'MAIL_MAX_PER_ADDRESS_PER_HOUR', 10, 1, 1_000_000),
  };
};

export type BusConfig =
  | { kind: 'in-process' }
  | {
      kind: 'kafka';
      brokers: ReadonlyArray<string>;
      clientId: string;
      /** KAFKA_TOPIC_PREFIX: prepended to every topic and consumer group, so deployments can share a cluster. */
      topicPrefix: string;
      /**
       * KAFKA_SESSION_TIMEOUT_MS: how long the group waits for a silent member (a killed worker or
       * scheduler) before its partitions, and so its queued messages and its projects, move on.
       */
      sessionTimeoutMs: number;
      /** KAFKA_SSL and its files: TLS to every broker, or null for plaintext. The files are read at start (ops/bus/kafka/kafkaSecurity.ts). */
      ssl: KafkaSslConfig | null;
      /** KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD: SASL authentication, or null for none. */
      sasl: KafkaSaslConfig | null;
    };

/**
 * TLS to the brokers. caFile: PEM certificates to trust instead of Node's public CAs (a private CA);
 * certFile and keyFile (both or neither): a client certificate, for brokers that require one.
 * The broker's certificate is always verified, its name too: there is no setting to switch that off.
 */
export interface KafkaSslConfig {
  caFile: string | null;
  certFile: string | null;
  keyFile: string | null;
}

export const KAFKA_SASL_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512'] as const;
export type KafkaSaslMechanism = (typeof KAFKA_SASL_MECHANISMS)[number];

export interface KafkaSaslConfig {
  mechanism: KafkaSaslMechanism;
  username: string;
  /** Never logged nor put in an error message; never in a run's environment (ops/worker/sandbox.ts scrubbedEnv). */
  password: string;
}

/**
 * KAFKA_SSL and KAFKA_SASL_*: strict, so that a half-configured security setting stops the start
 * rather than connecting with less than was meant. The password's value never appears in a message.
 */
const kafkaSecurityConfig = (env: NodeJS.ProcessEnv): { ssl: KafkaSslConfig | null; sasl: KafkaSaslConfig | null } => {
  const files = { caFile: text(env, 'KAFKA_SSL_CA_FILE'), certFile: text(env, 'KAFKA_SSL_CERT_FILE'), keyFile: text(env, 'KAFKA_SSL_KEY_FILE') };
  const named = (['KAFKA_SSL_CA_FILE', 'KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE'] as const).filter((name) => text(env, name) !== null);
  let ssl: KafkaSslConfig | null = null;
  if (flag(env, 'KAFKA_SSL', false)) {
    if ((files.certFile === null) !== (files.keyFile === null)) throw new Error('KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE must be given together (the client certificate and its private key)');
    // Relative paths are taken from the working directory, as DATA_DIR's.
    const absolute = (path: string | null) => (path === null ? null : resolve(path));
    ssl = { caFile: absolute(files.caFile), certFile: absolute(files.certFile), keyFile: absolute(files.keyFile) };
  } else if (named.length > 0) {
    throw new Error(`${named.join(', ')} ${named.length === 1 ? 'needs' : 'need'} KAFKA_SSL=true: without it the bus connects in plaintext`);
  }

  const mechanismText = text(env, 'KAFKA_SASL_MECHANISM');
  const username = text(env, 'KAFKA_SASL_USERNAME');
  const password = env.KAFKA_SASL_PASSWORD ?? '';
  if (mechanismText === null) {
    if (username !== null || password !== '') throw new Error('KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD need KAFKA_SASL_MECHANISM (plain, scram-sha-256 or scram-sha-512)');
    return { ssl, sasl: null };
  }
  const mechanism = mechanismText.trim().toLowerCase();
  if (!(KAFKA_SASL_MECHANISMS as ReadonlyArray<string>).includes(mechanism)) {
    throw new Error(`KAFKA_SASL_MECHANISM must be one of ${KAFKA_SASL_MECHANISMS.join(', ')}, got "${mechanismText}"`);
  }
  if (username === null) throw new Error(`KAFKA_SASL_MECHANISM=${mechanism} needs KAFKA_SASL_USERNAME`);
  if (password === '') throw new Error(`KAFKA_SASL_MECHANISM=${mechanism} needs KAFKA_SASL_PASSWORD`);
  // PLAIN sends the password itself to the broker: over plaintext anyone on the path reads it.
  if (mechanism === 'plain' && ssl === null) throw new Error('KAFKA_SASL_MECHANISM=plain sends the password in clear: it needs KAFKA_SSL=true (or use scram-sha-256/scram-sha-512)');
  return { ssl, sasl: { mechanism: mechanism as KafkaSaslMechanism, username, password } };
};

/** host:port, the host a name, an IPv4 address or a bracketed IPv6 address. */
const BROKER = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

/**
 * BUS picks the bus; unset, KAFKA_BROKERS alone means Kafka (DESIGN §1: the mode follows from the
 * addresses given). A Kafka bus needs at least one valid host:port broker.
 */
const busConfig = (env: NodeJS.ProcessEnv): BusConfig => {
  const brokersText = text(env, 'KAFKA_BROKERS');
  const kind = (text(env, 'BUS') ?? (brokersText === null ? 'in-process' : 'kafka')).toLowerCase();
  if (kind === 'in-process') return { kind };
  if (kind !== 'kafka') throw new Error(`BUS must be in-process or kafka, got "${env.BUS}"`);
  if (brokersText === null) throw new Error('KAFKA_BROKERS must list the Kafka brokers (host:port, comma-separated) when BUS is kafka');
  const brokers = brokersText.split(',').map((broker) => broker.trim());
  for (const broker of brokers) {
    const port = Number(BROKER.exec(broker)?.[2] ?? 0);
    if (port < 1 || port > 65535) throw new Error(`KAFKA_BROKERS must be a comma-separated list of host:port, got "${brokersText}"`);
  }
  const topicPrefix = text(env, 'KAFKA_TOPIC_PREFIX') ?? '';
  // Kafka topic names: letters, digits, '.', '_', '-' (249 at most; the prefix leaves room for ours).
  if (!/^[A-Za-z0-9._-]{0,100}$/.test(topicPrefix)) throw new Error(`KAFKA_TOPIC_PREFIX must be at most 100 letters, digits, '.', '_' or '-', got "${topicPrefix}"`);
  // The broker refuses sessions outside group.min/max.session.timeout.ms (6 s to 30 min by default).
  const sessionTimeoutMs = integer(env, 'KAFKA_SESSION_TIMEOUT_MS', 30_000, 6_000, 1_800_000);
  return { kind, brokers, clientId: text(env, 'KAFKA_CLIENT_ID') ?? 'pipeline-orchestrator', topicPrefix, sessionTimeoutMs, ...kafkaSecurityConfig(env) };
};

/** ROLE, overridden by `--role` on the command line (ops/main.ts). */
export const parseRole = (raw: string | null | undefined, from = 'ROLE'): Role => {
  const role = (raw ?? 'all').trim().toLowerCase();
  if (!(ROLES as ReadonlyArray<string>).includes(role)) throw new Error(`${from} must be one of ${ROLES.join(', ')}, got "${raw ?? ''}"`);
  return role as Role;
};

/**
 * EVENTSTORE_URL picks EventStoreDB/KurrentDB (DESIGN §1: the mode follows from the addresses
 * given); its client parses the rest, so only the scheme is checked here, to fail at start with a
 * message naming the variable rather than at the first append.
 */
const eventStoreConfig = (env: NodeJS.ProcessEnv): EventStoreConfig => {
  const url = text(env, 'EVENTSTORE_URL');
  if (url === null) return { kind: 'sqlite' };
  if (!/^(esdb|kurrentdb|kurrent|kdb)(\+discover)?:\/\/\S+$/i.test(url)) {
    throw new Error('EVENTSTORE_URL must be a KurrentDB/EventStoreDB connection string (kurrentdb://, kurrent://, kdb:// or the legacy esdb://, optionally +discover)');
  }
  return { kind: 'kurrentdb', connectionString: url };
};

/** MONGO_URL picks MongoDB for the read models; MONGO_DATABASE names the database (default `orchestrator`). */
const readStoreConfig = (env: NodeJS.ProcessEnv): ReadStoreConfig => {
  const url = text(env, 'MONGO_URL');
  if (url === null) {
    if (text(env, 'MONGO_DATABASE') !== null) throw new Error('MONGO_DATABASE needs MONGO_URL');
    return { kind: 'memory' };
  }
  if (!/^mongodb(\+srv)?:\/\/\S+$/.test(url)) throw new Error('MONGO_URL must be a mongodb:// or mongodb+srv:// connection string');
  const database = text(env, 'MONGO_DATABASE') ?? 'orchestrator';
  if (!/^[A-Za-z0-9_-]{1,63}$/.test(database)) throw new Error(`MONGO_DATABASE must be 1-63 letters, digits, _ or -, got "${database}"`);
  return { kind: 'mongodb', url, database };
};

/**
 * A process that runs only some roles hands work to the others over the bus: on the in-process bus
 * nothing would ever reach them (a worker would wait for ever, an API's tasks would never run).
 */
export const assertRoleHasBus = (role: Role, bus: BusConfig): void => {
  if (role !== 'all' && bus.kind !== 'kafka') {
    throw new Error(`role ${role} needs a shared bus: set KAFKA_BROKERS (the in-process bus only reaches its own process)`);
  }
};

const integer = (env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number => {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
};

/**
 * A client's share of streams (per user, per address) is at most the total. A share left at its
 * default under a smaller total is lowered to it, so LOG_STREAMS_MAX=4 alone is a valid setting.
 */
const share = (env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, total: number, totalName: string): number => {
  const raw = env[name];
  if (raw === undefined || raw === '') return Math.min(fallback, total);
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > total) {
    throw new Error(`${name} must be an integer between ${min} and ${totalName} (${total}), got "${raw}"`);
  }
  return value;
};

const logStreamShares = (env: NodeJS.ProcessEnv): StreamShareSettings => {
  const defaults = DEFAULT_LOG_STREAM_SHARES;
  const total = integer(env, 'LOG_STREAMS_MAX', defaults.total, 1, 100_000);
  const anonymousTotal = share(env, 'LOG_STREAMS_ANONYMOUS_MAX', defaults.anonymous?.total ?? 0, 0, total, 'LOG_STREAMS_MAX');
  return {
    total,
    perUser: share(env, 'LOG_STREAMS_PER_USER', defaults.perUser, 1, total, 'LOG_STREAMS_MAX'),
    anonymous: { total: anonymousTotal, perAddress: share(env, 'LOG_STREAMS_PER_ADDRESS', defaults.anonymous?.perAddress ?? 0, 1, total, 'LOG_STREAMS_MAX') },
  };
};

const eventStreamShares = (env: NodeJS.ProcessEnv): { total: number; perUser: number } => {
  const total = integer(env, 'EVENTS_STREAMS_MAX', DEFAULT_EVENT_STREAM_SHARES.total, 1, 100_000);
  return { total, perUser: share(env, 'EVENTS_STREAMS_PER_USER', DEFAULT_EVENT_STREAM_SHARES.perUser, 1, total, 'EVENTS_STREAMS_MAX') };
};

const flag = (env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean => {
  const raw = env[name]?.toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new Error(`${name} must be true or false, got "${env[name]}"`);
};

const text = (env: NodeJS.ProcessEnv, name: string): string | null => {
  const raw = env[name];
  return raw === undefined || raw === '' ? null : raw;
};

/**
 * WORKER_RUN_AS_UID and WORKER_RUN_AS_GID come together: half an identity is a mistake. A named
 * identity is one account (WORKER_RUN_AS_COUNT 1) unless a count says it is the start of a range.
 */
const runAs = (env: NodeJS.ProcessEnv): { uid: number; gid: number; count: number } | null => {
  const uid = text(env, 'WORKER_RUN_AS_UID');
  const gid = text(env, 'WORKER_RUN_AS_GID');
  if (uid === null && gid === null) {
    if (text(env, 'WORKER_RUN_AS_COUNT') !== null) throw new Error('WORKER_RUN_AS_COUNT needs WORKER_RUN_AS_UID and WORKER_RUN_AS_GID');
    return null;
  }
  if (uid === null || gid === null) throw new Error('WORKER_RUN_AS_UID and WORKER_RUN_AS_GID must be given together');
  const count = integer(env, 'WORKER_RUN_AS_COUNT', 1, 1, 65_536);
  const first = { uid: integer(env, 'WORKER_RUN_AS_UID', 0, 1, 2 ** 31 - 1), gid: integer(env, 'WORKER_RUN_AS_GID', 0, 1, 2 ** 31 - 1) };
  if (first.uid + count > 2 ** 31 || first.gid + count > 2 ** 31) throw new Error('WORKER_RUN_AS_UID/GID + WORKER_RUN_AS_COUNT must stay below 2^31');
  return { ...first, count };
};

/**
 * MARKETPLACE_URL: http or https, and nothing a request would carry besides the path: credentials in
 * the URL would go out with every fetch and be named on every imported item, a query or fragment
 * would be dropped or mangled when the catalog path is appended. A trailing slash is dropped.
 */
const marketplaceUrl = (env: NodeJS.ProcessEnv): string | null => {
  const raw = text(env, 'MARKETPLACE_URL');
  if (raw === null) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`MARKETPLACE_URL must be an http or https URL, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`MARKETPLACE_URL must be an http or https URL, got "${raw}"`);
  if (url.username !== '' || url.password !== '') throw new Error('MARKETPLACE_URL must not hold credentials (user:password@): the marketplace token is sent as a Bearer token');
  if (url.search !== '' || url.hash !== '') throw new Error(`MARKETPLACE_URL must not have a query or fragment, got "${raw}"`);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
};

/** WORKER_PYTHON: an absolute path (whether it is a usable interpreter is checked at start). */
const workerPython = (env: NodeJS.ProcessEnv): string | null => {
  const raw = text(env, 'WORKER_PYTHON');
  if (raw !== null && !isAbsolute(raw)) throw new Error(`WORKER_PYTHON must be an absolute path, got "${raw}"`);
  return raw;
};

const sandbox = (env: NodeJS.ProcessEnv): 'auto' | 'none' | 'bwrap' => {
  const raw = (text(env, 'WORKER_SANDBOX') ?? 'auto').toLowerCase();
  if (raw !== 'auto' && raw !== 'none' && raw !== 'bwrap') throw new Error(`WORKER_SANDBOX must be auto, bwrap or none, got "${env.WORKER_SANDBOX}"`);
  return raw;
};

export const loadConfig = (env: NodeJS.ProcessEnv = process.env): Config => {
  const synchronous = (env.SQLITE_SYNCHRONOUS ?? 'full').toLowerCase();
  if (synchronous !== 'full' && synchronous !== 'normal') {
    throw new Error(`SQLITE_SYNCHRONOUS must be full or normal, got "${synchronous}"`);
  }
  const dataDir = resolve(text(env, 'DATA_DIR') ?? './data');
  const role = parseRole(text(env, 'ROLE'));
  const bus = busConfig(env);
  assertRoleHasBus(role, bus);
  const workerConcurrency = integer(env, 'WORKER_CONCURRENCY', 8, 1, 256);
  const emailTotp = flag(env, 'EMAIL_TOTP', false);
  return {
    role,
    eventStore: eventStoreConfig(env),
    readStore: readStoreConfig(env),
    rebuildReadModels: flag(env, 'READ_MODELS_REBUILD', false),
    snapshotIntervalEvents: integer(env, 'SNAPSHOT_INTERVAL_EVENTS', 100_000, 0, 1_000_000_000),
    port: integer(env, 'PORT', 8080, 0, 65535),
    host: text(env, 'HOST') ?? '127.0.0.1',
    tracing: tracingConfigFrom(env),
    metrics: { token: text(env, 'METRICS_TOKEN'), port: text(env, 'METRICS_PORT') === null ? null : integer(env, 'METRICS_PORT', 0, 0, 65535) },
    dataDir,
    adminUsername: text(env, 'ADMIN_USERNAME') ?? 'admin',
    adminPassword: text(env, 'ADMIN_PASSWORD'),
    adminEmail: text(env, 'ADMIN_EMAIL') ?? 'admin@localhost',
    jwtPrivateKeyPem: text(env, 'JWT_PRIVATE_KEY'),
    jwtPublicKeyPem: text(env, 'JWT_PUBLIC_KEY'),
    encryptionKey: text(env, 'ENCRYPTION_KEY'),
    emailTotp,
    mail: mailConfig(env, emailTotp),
    sqliteSynchronous: synchronous,
    bodyLimit: text(env, 'BODY_LIMIT') ?? '1mb',
    cookieSecure: flag(env, 'COOKIE_SECURE', false),
    readYourWritesTimeoutMs: integer(env, 'READ_YOUR_WRITES_TIMEOUT_MS', 5000, 0, 600000),
    logToConsole: flag(env, 'LOG_TO_CONSOLE', false),
    logDir: resolve(text(env, 'LOG_DIR') ?? join(dataDir, 'logs')),
    logRetentionDays: integer(env, 'LOG_RETENTION_DAYS', 30, 1, 36_500),
    runOutput: {
      maxLines: integer(env, 'LOG_RUN_MAX_LINES', 10_000, 0, 10_000_000),
      maxBytes: integer(env, 'LOG_RUN_MAX_BYTES', 1024 * 1024, 0, 1024 * 1024 * 1024),
      maxLineBytes: integer(env, 'LOG_LINE_MAX_BYTES', 16 * 1024, 256, 16 * 1024 * 1024),
    },
    workerConcurrency,
    workerPollIntervalMs: integer(env, 'WORKER_POLL_INTERVAL_MS', 200, 10, 60_000),
    workerPickupCommitDeferMs: integer(env, 'WORKER_PICKUP_COMMIT_DEFER_MS', 10, 0, 60_000),
    workerMemoryMb: integer(env, 'WORKER_MEMORY_MB', 512, 32, 65_536),
    workerTimeoutSeconds: integer(env, 'WORKER_TIMEOUT_SECONDS', 6 * 3600, 1, 7 * 24 * 3600),
    workerMaxOutputBytes: integer(env, 'WORKER_MAX_OUTPUT_BYTES', 1024 * 1024, 1024, 256 * 1024 * 1024),
    workerPoolSize: integer(env, 'WORKER_POOL_SIZE', 2, 0, 64),
    workerNodeFork: flag(env, 'WORKER_NODE_FORK', true),
    workerReuseMaxRuns: integer(env, 'WORKER_REUSE_MAX_RUNS', 10_000, 1, 1_000_000_000),
    workerDiskMb: integer(env, 'WORKER_DISK_MB', 1024, 16, 1024 * 1024),
    workerShmMb: integer(env, 'WORKER_SHM_MB', 64, 1, 64 * 1024),
    workerMaxProcesses: integer(env, 'WORKER_MAX_PROCESSES', 512, 8, 1_000_000),
    workerCpuWeight: integer(env, 'WORKER_CPU_WEIGHT', 100, 1, 10_000),
    workerReuseMaxIdle: integer(env, 'WORKER_REUSE_MAX_IDLE', 2 * workerConcurrency, 1, 4096),
    reaperIntervalMs: integer(env, 'REAPER_INTERVAL_MS', 5000, 100, 3_600_000),
    shutdownGraceSeconds: integer(env, 'SHUTDOWN_GRACE_SECONDS', 30, 0, 86_400),
    slaMinuteMs: integer(env, 'SLA_MINUTE_MS', 60_000, 1, 60_000),
    workerRunAs: runAs(env),
    workerRunAsRegistry: resolve(text(env, 'WORKER_RUN_AS_REGISTRY') ?? DEFAULT_RUN_IDENTITY_REGISTRY),
    workerSandbox: sandbox(env),
    workerPython: workerPython(env),
    workerNetwork: workerNetwork(env),
    bus,
    trustProxyHops: integer(env, 'TRUST_PROXY_HOPS', 0, 0, 10),
    throttle: throttleConfig(env),
    eventStream: {
      heartbeatMs: integer(env, 'EVENTS_HEARTBEAT_MS', 15_000, 100, 3_600_000),
      slowClientMs: integer(env, 'EVENTS_SLOW_CLIENT_MS', 30_000, 100, 3_600_000),
      shares: eventStreamShares(env),
    },
    eventCheckpointEvery: integer(env, 'EVENTS_CHECKPOINT_EVERY', 1000, 0, 100_000_000),
    logStreams: logStreamShares(env),
    logQuery: {
      timeoutMs: integer(env, 'LOG_QUERY_TIMEOUT_SECONDS', 30, 1, 3600) * 1000,
      memoryLimitMb: integer(env, 'LOG_QUERY_MEMORY_MB', 512, 64, 65_536),
      threads: integer(env, 'LOG_QUERY_THREADS', 2, 1, 64),
      maxRows: integer(env, 'LOG_QUERY_MAX_ROWS', 10_000, 1, 1_000_000),
      sampleLines: integer(env, 'LOG_QUERY_SAMPLE_LINES', 20_480, 0, 100_000_000),
      maxConcurrent: integer(env, 'LOG_QUERY_CONCURRENCY', 2, 1, 64),
    },
    publicRoutesRequireAuth: flag(env, 'PUBLIC_ROUTES_REQUIRE_AUTH', false),
    logFollowIdleSeconds: integer(env, 'LOG_FOLLOW_IDLE_SECONDS', 300, 1, 86_400),
    query: {
      statementTimeoutMs: integer(env, 'QUERY_TIMEOUT_SECONDS', 120, 1, 86_400) * 1000,
      connectTimeoutMs: integer(env, 'QUERY_CONNECT_TIMEOUT_SECONDS', 10, 1, 600) * 1000,
      maxRows: integer(env, 'QUERY_MAX_ROWS', 10_000, 1, 1_000_000),
      maxBytes: integer(env, 'QUERY_MAX_BYTES', 32 * 1024 * 1024, 1024, 256 * 1024 * 1024),
    },
    marketplace: {
      url: marketplaceUrl(env),
      connectTimeoutMs: 10_000,
      timeoutMs: integer(env, 'MARKETPLACE_TIMEOUT_SECONDS', 30, 1, 600) * 1000,
      maxBytes: integer(env, 'MARKETPLACE_MAX_BYTES', 5 * 1024 * 1024, 1024, 256 * 1024 * 1024),
    },
    mcp: mcpSettings(env),
    ai: { timeoutSeconds: integer(env, 'AI_TIMEOUT_SECONDS', 300, 1, 3600), maxRetries: integer(env, 'AI_MAX_RETRIES', 1, 0, 10) },
    allowedRedirectOrigins: (text(env, 'OAUTH_REDIRECT_ORIGINS') ?? '')
      .split(',')
      .map((origin) => origin.trim())
      .filter((origin) => origin !== ''),
  };
};
