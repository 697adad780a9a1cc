import pg from 'pg';
import mysql from 'mysql2/promise';

/**
 * The real databases the query specs use (README, Tests): PostgreSQL on localhost:5432 (user
 * postgres, trust authentication, database test) and MariaDB on localhost:3306 (root, empty
 * password, database test); .ci/run starts both.
 */
export const POSTGRES = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' } as const;
export const MARIADB = { host: '127.0.0.1', port: 3306, user: 'root', password: '', database: 'test' } as const;

export type DatabaseKind = 'postgresql' | 'mariadb';

const probe = async (kind: DatabaseKind): Promise<string | null> => {
  try {
    if (kind === 'postgresql') {
      const client = new pg.Client({ ...POSTGRES, password: () => '', connectionTimeoutMillis: 3000 });
      client.on('error', () => undefined);
      await client.connect();
      await client.end();
    } else {
      const connection = await mysql.createConnection({ ...MARIADB, connectTimeout: 3000 });
      await connection.end();
    }
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
};

/**
 * Call in a `before` hook: when the database is not reachable the suite is skipped with the
 * reason printed, except in CI (CI=true), where it fails: CI starts both databases, so a missing
 * one is a broken build, not a reason to pass.
 */
export async function requireDatabase(context: Mocha.Context, kind: DatabaseKind): Promise<void> {
  const problem = await probe(kind);
  if (problem === null) return;
  const message = `${kind} is not reachable (${problem})`;
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(`${message}: CI needs it (.ci/run starts it)`);
  console.log(`      skipped: ${message}`);
  context.skip();
}

/** A direct PostgreSQL client for a spec's setup and checks (not the service's). */
export const postgresClient = async (): Promise<pg.Client> => {
  const client = new pg.Client({ ...POSTGRES, password: () => '' });
  client.on('error', () => undefined);
  await client.connect();
  return client;
};

export const mariadbConnection = (): Promise<mysql.Connection> => mysql.createConnection({ ...MARIADB });
