import { tmpdir } from 'node:os';

/**
 * Settings of the cloud query targets (spec 4.10, limits in section 8). The README's configuration
 * table lists the variables; malformed values stop the start with a message naming the variable,
 * as ops/config.ts does for the others.
 */
export interface CloudQuerySettings {
  /**
   * DUCKDB_EXTENSION_DIRECTORY: a DuckDB extension directory filled at deployment
   * (<dir>/<duckdb version>/<platform>/httpfs.duckdb_extension, azure.duckdb_extension). When the
   * extension a store needs is there, DuckDB reads the objects itself; otherwise the objects the SQL
   * names are fetched through the cloud SDK first. Extensions are never downloaded at run time.
   */
  extensionDirectory: string | null;
  /** QUERY_OBJECTS_MAX_MB: what one query may fetch into its temporary folder, in MiB (default 1024). */
  fetchMaxBytes: number;
  /** QUERY_OBJECTS_MAX_COUNT: objects one query may fetch (a glob over a big bucket is refused past it). */
  fetchMaxObjects: number;
  /** QUERY_OBJECTS_TEMP_DIR: where the per-query temporary folders go (default: the system's). */
  tempDirectory: string;
  /** QUERY_ENGINE_MEMORY_MB: DuckDB's memory_limit per query (spec 8: 512). */
  memoryLimitMb: number;
  /** QUERY_ENGINE_THREADS: DuckDB's threads per query (spec 8: 2). */
  threads: number;
  /** QUERY_ENGINE_CONCURRENCY: embedded-engine queries running at once; more wait (within their timeout). */
  maxConcurrent: number;
  /**
   * QUERY_CLOUD_AMBIENT_CREDENTIALS: a connection without credentials uses the service host's own
   * (AWS default chain, Google application default credentials), as the spec says. On by default;
   * off refuses such connections (bad_connection), for deployments where the host's role must not
   * be lent to whoever can write a connection item.
   */
  ambientCredentials: boolean;
}

export const DEFAULT_CLOUD_QUERY_SETTINGS: CloudQuerySettings = {
  extensionDirectory: null,
  fetchMaxBytes: 1024 * 1024 * 1024,
  fetchMaxObjects: 10_000,
  tempDirectory: tmpdir(),
  memoryLimitMb: 512,
  threads: 2,
  maxConcurrent: 2,
  ambientCredentials: true,
};

const text = (env: NodeJS.ProcessEnv, name: string): string | null => {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? null : value;
};

const integer = (env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number => {
  const value = text(env, name);
  if (value === null) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return Number(value);
};

const flag = (env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean => {
  const value = text(env, name)?.toLowerCase() ?? null;
  if (value === null) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['0', 'false', 'no', 'off'].includes(value)) return false;
  throw new Error(`${name} must be true or false, got ${JSON.stringify(value)}`);
};

export const cloudQuerySettingsFromEnv = (env: NodeJS.ProcessEnv): CloudQuerySettings => ({
  extensionDirectory: text(env, 'DUCKDB_EXTENSION_DIRECTORY'),
  fetchMaxBytes: integer(env, 'QUERY_OBJECTS_MAX_MB', 1024, 1, 1024 * 1024) * 1024 * 1024,
  fetchMaxObjects: integer(env, 'QUERY_OBJECTS_MAX_COUNT', 10_000, 1, 1_000_000),
  tempDirectory: text(env, 'QUERY_OBJECTS_TEMP_DIR') ?? tmpdir(),
  memoryLimitMb: integer(env, 'QUERY_ENGINE_MEMORY_MB', 512, 64, 65_536),
  threads: integer(env, 'QUERY_ENGINE_THREADS', 2, 1, 64),
  maxConcurrent: integer(env, 'QUERY_ENGINE_CONCURRENCY', 2, 1, 64),
  ambientCredentials: flag(env, 'QUERY_CLOUD_AMBIENT_CREDENTIALS', true),
});
