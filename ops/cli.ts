import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { systemClock } from '../shared/clock.ts';
import { AppError } from '../shared/errors.ts';
import { metadataFor } from '../shared/events.ts';
import { userHandler } from '../command-side/user/handler.ts';
import { loadConfig } from './config.ts';
import { openSqliteEventStore } from './event-store/sqlite/SqliteEventStore.ts';
import { loadKeys } from './keys/loadKeys.ts';
import { AesSecretBox } from './keys/AesSecretBox.ts';
import { scryptPasswords } from './auth/scryptPasswords.ts';

/**
 * Operator commands against DATA_DIR. They append to the same SQLite log as the service (WAL lets
 * both write; a running service notices the new events by polling), so they work whether the
 * service runs or not.
 */
const program = new Command('orchestrator').description('Pipeline orchestrator operations');

const nonEmpty = (name: string) => (value: string) => {
  if (value.trim() === '') throw new InvalidArgumentError(`${name} must not be empty`);
  return value;
};

program
  .command('user')
  .description('manage users')
  .command('create')
  .description('create a user (like POST /api/v1/user/create)')
  .requiredOption('--username <name>', 'login name', nonEmpty('username'))
  .requiredOption('--email <email>', 'email address', nonEmpty('email'))
  .option('--password <password>', 'password (default: read from the PASSWORD environment variable)')
  .option('--must-change-password', 'force a password change at first login', false)
  .option('--admin', 'make the user an administrator', false)
  .action(async (options: { username: string; email: string; password?: string; mustChangePassword: boolean; admin: boolean }) => {
    const password = options.password ?? process.env.PASSWORD;
    if (!password) throw new InvalidArgumentError('give --password or set PASSWORD');
    const config = loadConfig();
    const keys = await loadKeys(config);
    // One command, one append: a writer thread would only add its start-up.
    const eventStore = openSqliteEventStore({ file: join(config.dataDir, 'events.sqlite'), synchronous: config.sqliteSynchronous, writer: 'main-thread' });
    try {
      const users = userHandler({ eventStore, passwords: scryptPasswords(), secrets: new AesSecretBox(keys.encryptionKey) });
      const created = await users.create(
        { username: options.username, email: options.email, password, mustChangePassword: options.mustChangePassword, isAdmin: options.admin },
        metadataFor(null, systemClock.now(), 'cli'),
      );
      console.log(JSON.stringify({ user_laui: created.laui }));
    } finally {
      await eventStore.close();
    }
  });

program.parseAsync(process.argv).catch((error: unknown) => {
  const message = error instanceof AppError ? `${error.status}: ${JSON.stringify(error.detail)}` : error instanceof Error ? error.message : String(error);
  console.error(`error: ${message}`);
  process.exit(1);
});
