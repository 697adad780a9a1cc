import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { QueryTargetError } from '../../shared/ports/QueryTarget.ts';
import { awsFailure } from './awsFailure.ts';
import type { ObjectEntry, ObjectStore } from './ObjectStore.ts';

export interface S3StoreOptions {
  client: S3Client;
  label: string;
  schemes: ReadonlyArray<string>;
  /** The DuckDB secret for the httpfs extension, credentials resolved. */
  duckdbSecret(signal: AbortSignal): Promise<string>;
}

let s3Sdk: typeof import('@aws-sdk/client-s3') | undefined;
/** The S3 SDK's commands, imported at the first listing or read rather than at start (the SDK is slow to load). */
const loadS3Sdk = async (): Promise<typeof import('@aws-sdk/client-s3')> => (s3Sdk ??= await import('@aws-sdk/client-s3'));

/**
 * An S3 API bucket store: AWS S3, or Google Cloud Storage through its S3-compatible XML API with
 * HMAC keys. ListObjectsV2 pages for globs, HeadObject for a single object, GetObject streams.
 */
export const s3ObjectStore = (options: S3StoreOptions): ObjectStore => {
  const { client, label } = options;
  return {
    label,
    schemes: options.schemes,
    extension: 'httpfs',
    async *list(bucket, prefix, signal): AsyncIterable<ObjectEntry> {
      const { ListObjectsV2Command } = await loadS3Sdk();
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token, MaxKeys: 1000 }), { abortSignal: signal });
        for (const object of page.Contents ?? []) {
          if (object.Key !== undefined) yield { key: object.Key, size: object.Size ?? 0 };
        }
        token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
      } while (token !== undefined);
    },
    async head(bucket, key, signal) {
      const { HeadObjectCommand } = await loadS3Sdk();
      try {
        const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: signal });
        return { key, size: head.ContentLength ?? 0 };
      } catch (error) {
        const { name, $metadata } = error as { name?: string; $metadata?: { httpStatusCode?: number } };
        if (name === 'NotFound' || name === 'NoSuchKey' || $metadata?.httpStatusCode === 404) {
          // A missing bucket answers 404 to HEAD as well; the listing's NoSuchBucket says which.
          if (name === 'NoSuchBucket') throw error;
          return null;
        }
        throw error;
      }
    },
    async read(bucket, key, signal) {
      const { GetObjectCommand } = await loadS3Sdk();
      const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: signal });
      if (object.Body === undefined) throw new QueryTargetError('unreachable', `${label} answered ${bucket}/${key} without a body`);
      return object.Body as Readable;
    },
    duckdbSecret: options.duckdbSecret,
    failure(error, what) {
      const name = (error as { name?: string }).name;
      if (name === 'NoSuchBucket') return new QueryTargetError('sql', `${what}: no such bucket`);
      if (name === 'NoSuchKey' || name === 'NotFound') return new QueryTargetError('sql', `${what}: no such object`);
      return awsFailure(error, label);
    },
  };
};
