import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../ops/config.ts';
import { startService, type Service, type ServiceOverrides } from '../../ops/service.ts';
import { scryptPasswords } from '../../ops/auth/scryptPasswords.ts';
import { CapturingMailer } from '../../ops/mail/LogMailer.ts';
import { HttpClient } from './HttpClient.ts';
import { signIn } from './signIn.ts';

export const ADMIN = { username: 'admin', password: 'admin-password-1' };

export interface TestService {
  service: Service;
  config: Config;
  /** The mails sent, unless the env names a mail transport (SMTP_URL, MAIL_TRANSPORT): then they go through it. */
  mailer: CapturingMailer;
  announced: string[];
  dataDir: string;
  client(): HttpClient;
  /** Full login flow for a user; returns the access token and the browser-like client. */
  login(username?: string, password?: string): Promise<{ token: string; client: HttpClient }>;
  stop(options?: { keepData?: boolean }): Promise<void>;
}

/** The real embedded service on a free port and a fresh DATA_DIR; a cheap scrypt cost keeps tests fast. */
export const startTestService = async (env: Record<string, string> = {}, overrides: ServiceOverrides = {}, dataDir?: string): Promise<TestService> => {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'orchestrator-'));
  // Not root (a developer's machine): code runs would be refused (ops/worker/sandbox.ts, decideSandbox);
  // the suite runs them with the test process's rights instead. CI runs as root: the real default.
  const sandbox = process.getuid?.() === 0 ? {} : { WORKER_SANDBOX: 'none' };
  // As root a service claims its run identities host-wide (ops/worker/runIdentityRegistry.ts): a test
  // service claims them in a registry of its own, never in the real one (a real instance on this
  // host, other test processes) nor in one shared with other test services, unless `env` names one.
  const registry = env.WORKER_RUN_AS_REGISTRY === undefined ? mkdtempSync(join(tmpdir(), 'run-uids-')) : null;
  const config = loadConfig({
    PORT: '0',
    DATA_DIR: dir,
    ADMIN_PASSWORD: ADMIN.password,
    SQLITE_SYNCHRONOUS: 'normal',
    ...sandbox,
    ...(registry ? { WORKER_RUN_AS_REGISTRY: registry } : {}),
    ...env,
  });
  const removeRegistry = () => {
    if (registry) rmSync(registry, { recursive: true, force: true });
  };
  const mailer = new CapturingMailer();
  const announced: string[] = [];
  const service = await startService(config, {
    // A service given a mail transport (SMTP_URL, MAIL_TRANSPORT) sends through it; else tests read `mailer`.
    ...(config.mail.transport === 'none' ? { mailer } : {}),
    passwords: scryptPasswords(2 ** 10),
    announce: (message) => announced.push(message),
    ...overrides,
  }).catch((error: unknown) => {
    // A start refused (a test may expect that): nothing of it is left behind.
    removeRegistry();
    if (dataDir === undefined) rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  const test: TestService = {
    service,
    config,
    mailer,
    announced,
    dataDir: dir,
    client: () => new HttpClient(service.url),
    login: (username = ADMIN.username, password = ADMIN.password) => signIn(service.url, username, password),
    async stop(options = {}) {
      await service.close();
      removeRegistry();
      if (!options.keepData) rmSync(dir, { recursive: true, force: true });
    },
  };
  return test;
};
