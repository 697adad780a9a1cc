import { Command, InvalidArgumentError, Option } from 'commander';
import { systemClock } from '../../shared/clock.ts';
import { AppError } from '../../shared/errors.ts';
import { metadataFor } from '../../shared/events.ts';
import { userHandler } from '../../command-side/user/handler.ts';
import { loadConfig } from '../config.ts';
import { loadKeys } from '../keys/loadKeys.ts';
import { AesSecretBox } from '../keys/AesSecretBox.ts';
import { scryptPasswords } from '../auth/scryptPasswords.ts';
import { SingleBar, Presets } from 'cli-progress';
import type { Position } from '../../shared/event-store/EventStore.ts';
import { userStream, usernameKey } from '../../command-side/user/user.ts';
import { uniqueKeyDecider, uniqueKeyStream } from '../../command-side/kernel/uniqueKey.ts';
import { loadState } from '../../command-side/kernel/handleCommand.ts';
import { toEnvelope } from '../../query-side/events/eventEnvelope.ts';
import { eventMatches } from '../../query-side/events/readEventsPage.ts';
import { EXPORT_FORMATS, exportEvents, type ExportFormat } from '../events/exportEvents.ts';
import { archiveEvents, parseDuration } from '../events/archiveEvents.ts';
import { exportFormatFor } from './exportFormat.ts';
import { dataDirProblem, openDataDirStore } from './openDataDirStore.ts';
import { backupDataDir } from '../backup/backupDataDir.ts';
import { restoreDataDir } from '../backup/restoreDataDir.ts';
import { serviceVersion } from '../serviceVersion.ts';
import { addChainCommands } from '../events/chainCommands.ts';
import { exportRawChain } from '../events/exportRawChain.ts';

const nonEmpty = (name: string) => (value: string) => {
  if (value.trim() === '') throw new InvalidArgumentError(`${name} must not be empty`);
  return value;
};

const position = (name: string) => (value: string): Position => {
  if (!/^\d{1,16}$/.test(value)) throw new InvalidArgumentError(`${name} must be a global position (a non-negative integer)`);
  return BigInt(value);
};

/** `--from`'s default shown as a number: commander shows a default with JSON.stringify, which throws on a bigint. */
const fromOption = (description: string, defaultValue?: Position): Option => {
  const option = new Option('--from <position>', description).argParser(position('from'));
  return defaultValue === undefined ? option : option.default(defaultValue, String(defaultValue));
};

/**
 * The operator commands against DATA_DIR (ops/cli.ts runs them). They append to the same SQLite
 * log as the service (WAL lets both write; a running service notices the new events by polling), so
 * they work whether the service runs or not. A new program each call: tests parse one per case.
 */
export const cliProgram = (): Command => {
  const program = new Command('orchestrator').description('Pipeline orchestrator operations');

  const user = program.command('user').description('manage users');

  user
    .command('create')
    .description('create a user (like POST /api/v1/user/create)')
    .requiredOption('--username <name>', 'login name', nonEmpty('username'))
    .requiredOption('--email <email>', 'email address', nonEmpty('email'))
    .option('--password <password>', 'password (default: read from the PASSWORD environment variable)')
    .option('--must-change-password', 'force a password change at first login', false)
    .option('--admin', 'make the user an administrator', false)
    .option('--auditor', 'grant the auditor role (reads the whole event log: GET /api/v1/events)', false)
    .action(async (options: { username: string; email: string; password?: string; mustChangePassword: boolean; admin: boolean; auditor: boolean }) => {
      const password = options.password ?? process.env.PASSWORD;
      if (!password) throw new InvalidArgumentError('give --password or set PASSWORD');
      const config = loadConfig();
      // DATA_DIR checked (and the log opened) first: loadKeys would make DATA_DIR/keys in any directory.
      const eventStore = openDataDirStore(config);
      try {
        const keys = await loadKeys(config);
        const users = userHandler({ eventStore, passwords: scryptPasswords(), secrets: new AesSecretBox(keys.encryptionKey) });
        const created = await users.create(
          {
            username: options.username,
            email: options.email,
            password,
            mustChangePassword: options.mustChangePassword,
            isAdmin: options.admin,
            isAuditor: options.auditor,
          },
          metadataFor(null, systemClock.now(), 'cli'),
        );
        console.log(JSON.stringify({ user_laui: created.laui }));
      } finally {
        await eventStore.close();
      }
    });

  user
    .command('grant-auditor')
    .description('grant (or with --revoke withdraw) the auditor role (like POST /api/v1/user/roles)')
    .requiredOption('--username <name>', 'login name', nonEmpty('username'))
    .option('--revoke', 'withdraw the role instead', false)
    .action(async (options: { username: string; revoke: boolean }) => {
      const config = loadConfig();
      const eventStore = openDataDirStore(config);
      try {
        const keys = await loadKeys(config);
        // The name's reservation names its user's stream: no read model needed beside the log.
        const reservation = await loadState(eventStore, uniqueKeyStream(usernameKey(options.username)), uniqueKeyDecider);
        const owner = reservation.owner;
        if (owner === null || !owner.startsWith('user-')) throw new AppError(404, 'User not found');
        const laui = owner.slice('user-'.length);
        if ((await eventStore.readStream(userStream(laui), { toRevision: 0 })).length === 0) throw new AppError(404, 'User not found');
        const users = userHandler({ eventStore, passwords: scryptPasswords(), secrets: new AesSecretBox(keys.encryptionKey) });
        await users.setAuditor(laui, !options.revoke, metadataFor(null, systemClock.now(), 'cli'));
        console.log(JSON.stringify({ user_laui: laui, is_auditor: !options.revoke }));
      } finally {
        await eventStore.close();
      }
    });

  const events = program.command('events').description('read the event log (redacted as GET /api/v1/events serves it) and verify its hash chain');

  events
    .command('export')
    .description('write events to a file (JSON lines, Parquet or CSV: the extension of --out tells which), with a progress bar')
    .requiredOption('--out <file>', 'the file to write: .jsonl or .ndjson, .parquet, .csv (another name needs --format)', nonEmpty('out'))
    .addOption(fromOption('start after this global position (exclusive)', 0n))
    .option('--to <position>', 'stop at this global position (inclusive; default: the head at start)', position('to'))
    .option('--type <prefix>', 'only event types starting with this (e.g. Task)')
    .addOption(new Option('--format <format>', "the file's format (default: the one the extension of --out names)").choices(EXPORT_FORMATS))
    .option('--raw', 'the events as stored, with their hash chain, unredacted (JSON lines only, no --type): what events verify --file checks', false)
    .action(async (options: { out: string; from: Position; to?: Position; type?: string; format?: ExportFormat; raw: boolean }) => {
      const format = exportFormatFor(options.out, options.format);
      if (options.raw && (format !== 'jsonl' || options.type !== undefined)) throw new InvalidArgumentError('--raw writes JSON lines of every event: no --type, and --out .jsonl (or --format jsonl)');
      const eventStore = openDataDirStore(loadConfig());
      // On stderr, and only on a terminal: stdout carries the summary line for scripts.
      const bar = new SingleBar({ stream: process.stderr, format: 'events {bar} {percentage}% | {value}/{total} positions | ETA {eta}s' }, Presets.shades_classic);
      let started = false;
      try {
        const onProgress = (done: number, total: number): void => {
          if (!started) bar.start(total, 0);
          started = true;
          bar.update(done);
        };
        if (options.raw) {
          const head = await eventStore.headPosition();
          const result = await exportRawChain(eventStore.chain, { from: options.from, to: options.to !== undefined && options.to < head ? options.to : head, out: options.out, onProgress });
          bar.stop();
          console.log(JSON.stringify({ out: options.out, format, raw: true, events: result.events, last_position: Number(result.last) }));
          return;
        }
        const result = await exportEvents(eventStore, {
          from: options.from,
          ...(options.to === undefined ? {} : { to: options.to }),
          ...(options.type === undefined ? {} : { type: options.type }),
          format,
          out: options.out,
          onProgress,
        });
        if (started) bar.stop();
        console.log(JSON.stringify({ out: options.out, format, events: result.events, last_position: Number(result.last) }));
      } finally {
        if (started) bar.stop();
        await eventStore.close();
      }
    });

  events
    .command('archive')
    .description('copy the events recorded before a retention window to a Parquet file in --out (opt-in; the live log keeps them)')
    .requiredOption('--older-than <duration>', 'the retention window: events recorded longer ago than this are archived (90d, 12h, 2w...)', (value: string): number => {
      const ms = parseDuration(value);
      if (ms === null) throw new InvalidArgumentError('older-than must be a number and a unit: s, m, h, d or w (e.g. 90d)');
      return ms;
    })
    .requiredOption('--out <dir>', 'the archive directory: one events-<first>-<last>.parquet per run, each run going on after the newest', nonEmpty('out'))
    .action(async (options: { olderThan: number; out: string }) => {
      const eventStore = openDataDirStore(loadConfig());
      const bar = progressBar('events {bar} {percentage}% | ETA {eta}s');
      try {
        const result = await archiveEvents(eventStore, { dir: options.out, olderThanMs: options.olderThan, now: systemClock.now(), onProgress: (done, total) => bar.update('events', done, total) });
        bar.stop();
        console.log(JSON.stringify({ ...result, from: Number(result.from), last: Number(result.last) }));
      } finally {
        bar.stop();
        await eventStore.close();
      }
    });

  events
    .command('tail')
    .description('follow the log: one served event (JSON) per line, until interrupted')
    .addOption(fromOption('start after this global position (default: the head, new events only)'))
    .option('--type <prefix>', 'only event types starting with this')
    .option('--stream <id>', 'only this stream')
    .action(async (options: { from?: Position; type?: string; stream?: string }) => {
      const eventStore = openDataDirStore(loadConfig());
      const matches = eventMatches({ ...(options.type === undefined ? {} : { type: options.type }), ...(options.stream === undefined ? {} : { stream: options.stream }) });
      const after = options.from ?? (await eventStore.headPosition());
      await new Promise<void>((resolve, reject) => {
        const subscription = eventStore.subscribeToAll({
          after,
          onEvent: async (event) => {
            if (!matches(event)) return;
            // Honour a slow reader of the pipe (| head, | jq): wait rather than buffer.
            if (!process.stdout.write(`${JSON.stringify(toEnvelope(event))}\n`)) await new Promise((done) => process.stdout.once('drain', done));
          },
          onError: reject,
        });
        const stop = (): void => {
          void subscription.close().then(resolve, reject);
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        process.stdout.once('error', stop);
      });
      await eventStore.close();
    });

  addChainCommands(events);

  program
    .command('backup')
    .description("a consistent copy of DATA_DIR while the service runs: the event log (SQLite's backup API), the keys and settings, in one file of mode 0600")
    .requiredOption('--out <file>', 'the backup file to write (a gzipped tar)', nonEmpty('out'))
    .option('--force', 'replace --out if it exists', false)
    .option('--with-logs', 'include LOG_DIR when it lies in DATA_DIR (left out by default)', false)
    .action(async (options: { out: string; force: boolean; withLogs: boolean }) => {
      const config = loadConfig();
      const problem = dataDirProblem(config.dataDir, process.env.DATA_DIR);
      if (problem !== null) throw new Error(problem);
      const bar = progressBar('{phase} {bar} {percentage}% | ETA {eta}s');
      try {
        const manifest = await backupDataDir({
          dataDir: config.dataDir,
          out: options.out,
          force: options.force,
          withLogs: options.withLogs,
          logDir: config.logDir,
          serviceVersion: serviceVersion(),
          onProgress: (progress) => bar.update(progress.phase === 'log' ? 'event log' : 'packing', progress.done, progress.total),
        });
        bar.stop();
        console.error(`WARNING: ${options.out} holds the service's keys (the encryption key of every sealed secret, the token signing key): keep it as you keep DATA_DIR/keys.`);
        // Keys given by the environment are not in DATA_DIR: a restore without them opens nothing.
        const fromEnvironment = [config.encryptionKey === null ? null : 'ENCRYPTION_KEY', config.jwtPrivateKeyPem === null ? null : 'JWT_PRIVATE_KEY and JWT_PUBLIC_KEY'].filter((name) => name !== null);
        if (fromEnvironment.length > 0) console.error(`NOTE: the environment gives ${fromEnvironment.join(' and ')}, which the backup does not hold (only DATA_DIR/keys): start the restored service with the same values.`);
        console.log(JSON.stringify({ out: options.out, files: manifest.files.length, bytes: manifest.files.reduce((sum, file) => sum + file.size, 0), log_head_position: manifest.log_head_position }));
      } finally {
        bar.stop();
      }
    });

  program
    .command('restore')
    .description('fill an empty DATA_DIR from a backup file (refuses a DATA_DIR that is not empty); every file is checked before any is put in place')
    .requiredOption('--from <file>', 'the backup file (cli backup --out)', nonEmpty('from'))
    .action(async (options: { from: string }) => {
      const config = loadConfig();
      const bar = progressBar('restore {bar} {percentage}% | ETA {eta}s');
      try {
        const manifest = await restoreDataDir({ from: options.from, dataDir: config.dataDir, onProgress: (progress) => bar.update('restore', progress.done, progress.total) });
        bar.stop();
        console.log(JSON.stringify({ data_dir: config.dataDir, files: manifest.files.length, log_head_position: manifest.log_head_position, created_at: manifest.created_at }));
      } finally {
        bar.stop();
      }
    });

  return program;
};

/** A progress bar on stderr, on a terminal only (stdout carries the summary line for scripts; cli-progress draws nothing elsewhere). */
const progressBar = (format: string) => {
  const bar = new SingleBar({ stream: process.stderr, format }, Presets.shades_classic);
  let started = false;
  return {
    update(phase: string, done: number, total: number) {
      if (!started) bar.start(total, 0, { phase });
      started = true;
      bar.setTotal(total);
      bar.update(done, { phase });
    },
    stop() {
      if (started) bar.stop();
      started = false;
    },
  };
};
