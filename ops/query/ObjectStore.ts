import type { Readable } from 'node:stream';
import type { QueryTargetError } from '../../shared/ports/QueryTarget.ts';

export interface ObjectEntry {
  key: string;
  size: number;
}

/**
 * What the embedded engine needs of a bucket store (S3, GCS through its S3-compatible API, Azure
 * Blob): adapters in s3ObjectStore.ts and azureObjectStore.ts, built by the targets' factories.
 */
export interface ObjectStore {
  /** For messages: "S3", "Google Cloud Storage", "Azure Blob Storage". */
  readonly label: string;
  /** The URL schemes it reads, without "://": ['s3'], ['gs', 'gcs'], ['az', 'azure']. */
  readonly schemes: ReadonlyArray<string>;
  /** The DuckDB extension that reads these URLs itself, when DUCKDB_EXTENSION_DIRECTORY has it. */
  readonly extension: 'httpfs' | 'azure';
  /** Objects under `prefix`, every page, in the store's order. */
  list(bucket: string, prefix: string, signal: AbortSignal): AsyncIterable<ObjectEntry>;
  /** One object's size, or null when there is no such object. */
  head(bucket: string, key: string, signal: AbortSignal): Promise<ObjectEntry | null>;
  /** One object's bytes. */
  read(bucket: string, key: string, signal: AbortSignal): Promise<Readable>;
  /** The CREATE SECRET statement giving DuckDB's extension the same credentials (resolved now: a role or chain becomes keys). */
  duckdbSecret(signal: AbortSignal): Promise<string>;
  /** An SDK error as the port's failure kind; `what` names the bucket or object. */
  failure(error: unknown, what: string): QueryTargetError;
}
