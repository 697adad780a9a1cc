import { createRequire } from 'node:module';
import type { BlobServiceClient, StoragePipelineOptions } from '@azure/storage-blob';
import type { QueryTarget, ResolvedConnection } from '../../shared/ports/QueryTarget.ts';
import { azureObjectStore } from './azureObjectStore.ts';
import type { CloudTargetDeps } from './cloudTargetDeps.ts';
import { ConnectionParams } from './connectionParams.ts';
import { embeddedQuery } from './embeddedQuery.ts';

let azureSdk: typeof import('@azure/storage-blob') | undefined;
/**
 * The Blob SDK, loaded when the first azure target is built rather than at start (it is slow to
 * load). Required, not imported: the factory is synchronous (a malformed connection string fails
 * when the target is built), and the package ships a CommonJS build.
 */
const loadAzureSdk = (): typeof import('@azure/storage-blob') => (azureSdk ??= createRequire(import.meta.url)('@azure/storage-blob') as typeof import('@azure/storage-blob'));

/** Two tries: a statement waits for the store on its own clock, and an unreachable account should fail within the connect timeout. */
const PIPELINE: StoragePipelineOptions = { retryOptions: { maxTries: 2 } };

/**
 * connection.azure (spec 4.10, cloud_c): Azure Blob Storage through the embedded engine, with a
 * connection_string, or account_name + account_key (https://<account>.blob.core.windows.net).
 * URLs: az://<container>/<path> or azure://<container>/<path>, globs allowed.
 */
export const azureQueryTarget = (connection: ResolvedConnection, deps: CloudTargetDeps): QueryTarget => {
  const params = new ConnectionParams(connection);
  const connectionString = params.text('connection_string');
  const accountName = params.text('account_name');
  const accountKey = params.text('account_key');
  if (connectionString === undefined && (accountName === undefined || accountKey === undefined)) {
    throw params.bad('(Blob Storage) needs connection_string, or account_name and account_key');
  }
  const { BlobServiceClient, StorageSharedKeyCredential } = loadAzureSdk();
  let service: BlobServiceClient;
  let duckdbConnectionString: string;
  if (connectionString !== undefined) {
    try {
      service = BlobServiceClient.fromConnectionString(connectionString, PIPELINE);
    } catch {
      throw params.bad('has a connection_string that is not an Azure Storage connection string');
    }
    duckdbConnectionString = connectionString;
  } else {
    const name = accountName as string;
    const endpoint = deps.endpoints?.azureBlob?.(name) ?? `https://${name}.blob.core.windows.net`;
    service = new BlobServiceClient(endpoint, new StorageSharedKeyCredential(name, accountKey as string), PIPELINE);
    duckdbConnectionString = `DefaultEndpointsProtocol=https;AccountName=${name};AccountKey=${accountKey as string};BlobEndpoint=${endpoint}`;
  }
  const store = azureObjectStore(service, duckdbConnectionString);
  return { execute: (request) => embeddedQuery(store, request, deps.settings, deps.slots) };
};
