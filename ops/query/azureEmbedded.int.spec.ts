import { expect } from 'chai';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BlobServiceClient } from '@azure/storage-blob';
import { DEFAULT_CLOUD_QUERY_SETTINGS, type CloudQuerySettings } from './cloudQuerySettings.ts';
import { cloudTargetFactoriesWith } from './cloudTargets.ts';
import { closedPortUrl } from '../../test/support/cloud/loopbackServer.ts';
import { AZURITE_ACCOUNT, AZURITE_KEY, startAzurite } from '../../test/support/cloud/objectStoreServers.ts';
import { failure, queryRequest } from '../../test/support/cloud/queryRequest.ts';
import { sampleObjects } from '../../test/support/cloud/sampleObjects.ts';

describe('Azure Blob Storage through the embedded engine (Azurite on loopback)', function () {
  this.timeout(60_000);
  let azurite: Awaited<ReturnType<typeof startAzurite>> | undefined;
  let temp: string | undefined;
  let settings: CloudQuerySettings;

  before(async () => {
    azurite = await startAzurite();
    const service = BlobServiceClient.fromConnectionString(azurite.connectionString);
    const container = service.getContainerClient('lake');
    await container.create();
    for (const [key, body] of await sampleObjects()) await container.getBlockBlobClient(key).uploadData(body);
    temp = mkdtempSync(join(tmpdir(), 'cloud-query-temp-'));
    settings = { ...DEFAULT_CLOUD_QUERY_SETTINGS, tempDirectory: temp };
  });
  after(async () => {
    await azurite?.close();
    if (temp !== undefined) rmSync(temp, { recursive: true, force: true });
  });
  afterEach(() => {
    expect(readdirSync(temp as string)).to.deep.equal([]);
  });

  const azure = (params: Record<string, unknown>, endpoint?: string) =>
    cloudTargetFactoriesWith({ settings, endpoints: { azureBlob: () => endpoint ?? (azurite as { blobEndpoint: string }).blobEndpoint } })['connection.azure']!({ itemType: 'connection.azure', params });

  it('given a connection string, when az:// and azure:// URLs are read with globs, then the blobs\' rows', async () => {
    const target = azure({ connection_string: azurite!.connectionString });
    const parquet = await target.execute(queryRequest("SELECT count(*) AS n, max(id) AS top FROM read_parquet('az://lake/orders.parquet')"));
    expect(parquet.rows).to.deep.equal([[100, 99]]);
    const csv = await target.execute(queryRequest("SELECT id, label FROM read_csv('azure://lake/csv/*.csv') ORDER BY id"));
    expect(csv.rows).to.deep.equal([[1, 'one'], [2, 'two'], [3, 'three'], [4, 'four']]);
    const hive = await target.execute(queryRequest("SELECT year, sum(total) FROM read_parquet('az://lake/sales/**/*.parquet', hive_partitioning = true) GROUP BY year ORDER BY year"));
    expect(hive.rows).to.deep.equal([[2023, 60], [2024, 59]]);
  });

  it('given an account name and key, when executed, then the same blobs, capped at maxRows', async () => {
    const target = azure({ account_name: AZURITE_ACCOUNT, account_key: AZURITE_KEY });
    const result = await target.execute(queryRequest("SELECT * FROM 'az://lake/orders.parquet'", { maxRows: 5 }));
    expect(result.row_count).to.equal(5);
    expect(result.truncated).to.equal(true);
  });

  it('given a missing container or blob, when executed, then sql saying which', async () => {
    const target = azure({ connection_string: azurite!.connectionString });
    expect((await failure(() => target.execute(queryRequest("SELECT * FROM read_parquet('az://nope/x.parquet')")), 'sql')).message).to.contain('no such container');
    expect((await failure(() => target.execute(queryRequest("SELECT * FROM read_parquet('az://lake/x.parquet')")), 'sql')).message).to.contain('az://lake/x.parquet: no such object');
  });

  it('given a wrong account key, when executed, then unreachable', async () => {
    const target = azure({ account_name: AZURITE_ACCOUNT, account_key: Buffer.from('not the key').toString('base64') });
    await failure(() => target.execute(queryRequest("SELECT * FROM read_parquet('az://lake/orders.parquet')")), 'unreachable');
  });

  it('given an endpoint nobody listens on, when executed, then unreachable', async () => {
    const target = azure({ account_name: AZURITE_ACCOUNT, account_key: AZURITE_KEY }, `${await closedPortUrl()}/${AZURITE_ACCOUNT}`);
    await failure(() => target.execute(queryRequest("SELECT * FROM read_parquet('az://lake/orders.parquet')")), 'unreachable');
  });
});
