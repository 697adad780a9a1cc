import type { Readable } from 'node:stream';
import type { BlobServiceClient } from '@azure/storage-blob';
import { QueryTargetError } from '../../shared/ports/QueryTarget.ts';
import type { ObjectEntry, ObjectStore } from './ObjectStore.ts';
import { shortMessage } from './queryRun.ts';

/** The service's error code: on the error itself, or (answers without a body, such as HEAD) in details.errorCode from x-ms-error-code. */
const errorCode = (error: unknown): string | undefined => {
  const { code, details } = error as { code?: string; details?: { errorCode?: string } };
  return code ?? details?.errorCode;
};

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'REQUEST_SEND_ERROR']);

/**
 * Azure Blob Storage as a bucket store (az://<container>/<path>, azure://...): listBlobsFlat pages
 * for globs, getProperties for a single blob, download streams. `connectionString` is what DuckDB's
 * azure extension is given when it reads the blobs itself.
 */
export const azureObjectStore = (service: BlobServiceClient, connectionString: string): ObjectStore => ({
  label: 'Azure Blob Storage',
  schemes: ['az', 'azure'],
  extension: 'azure',
  async *list(container, prefix, signal): AsyncIterable<ObjectEntry> {
    const pages = service.getContainerClient(container).listBlobsFlat({ prefix, abortSignal: signal }).byPage({ maxPageSize: 5000 });
    for await (const page of pages) {
      for (const blob of page.segment.blobItems) yield { key: blob.name, size: blob.properties.contentLength ?? 0 };
    }
  },
  async head(container, key, signal) {
    try {
      const properties = await service.getContainerClient(container).getBlobClient(key).getProperties({ abortSignal: signal });
      return { key, size: properties.contentLength ?? 0 };
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404 && errorCode(error) !== 'ContainerNotFound') return null;
      throw error;
    }
  },
  async read(container, key, signal) {
    const response = await service.getContainerClient(container).getBlobClient(key).download(0, undefined, { abortSignal: signal });
    if (response.readableStreamBody === undefined) throw new QueryTargetError('unreachable', `Azure Blob Storage answered ${container}/${key} without a body`);
    return response.readableStreamBody as Readable;
  },
  async duckdbSecret() {
    return `CREATE SECRET query_store (TYPE azure, CONNECTION_STRING '${connectionString.replace(/'/g, "''")}')`;
  },
  failure(error, what) {
    if (error instanceof QueryTargetError) return error;
    const { statusCode, message = String(error) } = error as { statusCode?: number; message?: string };
    const code = errorCode(error);
    if (code === 'ContainerNotFound') return new QueryTargetError('sql', `${what}: no such container`);
    if (code === 'BlobNotFound' || statusCode === 404) return new QueryTargetError('sql', `${what}: no such blob`);
    if ((code !== undefined && NETWORK_CODES.has(code)) || statusCode === undefined) {
      return new QueryTargetError('unreachable', `Azure Blob Storage is unreachable: ${shortMessage(message)}`);
    }
    if (statusCode === 401 || statusCode === 403) {
      return new QueryTargetError('unreachable', `Azure Blob Storage refused the credentials: ${code ?? statusCode}: ${shortMessage(message)}`);
    }
    if (statusCode >= 500 || statusCode === 429) return new QueryTargetError('unreachable', `Azure Blob Storage cannot serve the statement now: ${shortMessage(message)}`);
    return new QueryTargetError('sql', `Azure Blob Storage: ${what}: ${shortMessage(message)}`);
  },
});
