import { expect } from 'chai';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { QueryRequest, QueryResult } from '../../shared/ports/QueryTarget.ts';
import { DEFAULT_CLOUD_QUERY_SETTINGS, type CloudQuerySettings } from './cloudQuerySettings.ts';
import { cloudTargetFactoriesWith } from './cloudTargets.ts';
import { closedPortUrl } from '../../test/support/cloud/loopbackServer.ts';
import { S3RVER_KEYS, startS3rver } from '../../test/support/cloud/objectStoreServers.ts';
import { failure, queryRequest } from '../../test/support/cloud/queryRequest.ts';
import { sampleObjects } from '../../test/support/cloud/sampleObjects.ts';

describe('S3 and Cloud Storage through the embedded engine (s3rver on loopback)', () => {
  let s3: { url: string; close(): Promise<void> };
  let temp: string;
  let settings: CloudQuerySettings;

  before(async () => {
    s3 = await startS3rver(['data']);
    const client = new S3Client({
      region: 'us-east-1',
      endpoint: s3.url,
      forcePathStyle: true,
      credentials: S3RVER_KEYS,
      requestChecksumCalculation: 'WHEN_REQUIRED',
    });
    for (const [key, body] of await sampleObjects()) await client.send(new PutObjectCommand({ Bucket: 'data', Key: key, Body: body }));
    client.destroy();
    temp = mkdtempSync(join(tmpdir(), 'cloud-query-temp-'));
    settings = { ...DEFAULT_CLOUD_QUERY_SETTINGS, tempDirectory: temp };
  });
  after(async () => {
    await s3?.close();
    if (temp !== undefined) rmSync(temp, { recursive: true, force: true });
  });
  afterEach(() => {
    // Whatever the statement did, its temporary folder is gone once it has answered.
    expect(readdirSync(temp)).to.deep.equal([]);
  });

  const aws = (params: Record<string, unknown> = {}, overrides: Partial<CloudQuerySettings> = {}) =>
    cloudTargetFactoriesWith({ settings: { ...settings, ...overrides }, endpoints: { s3: s3.url } })['connection.aws']!({
      itemType: 'connection.aws',
      params: { region: 'us-east-1', access_key: S3RVER_KEYS.accessKeyId, secret_key: S3RVER_KEYS.secretAccessKey, ...params },
    });
  const run = (sql: string, request: Partial<QueryRequest> = {}): Promise<QueryResult> => aws().execute(queryRequest(sql, request));

  it('given a Parquet object, when read_parquet names it, then its rows with JSON-safe values (a 21-digit decimal as text)', async () => {
    const result = await run("SELECT id, name, amount FROM read_parquet('s3://data/orders.parquet') ORDER BY id LIMIT 3");
    expect(result).to.deep.equal({ columns: ['id', 'name', 'amount'], rows: [[0, 'name-0', '0.0'], [1, 'name-1', '1.5'], [2, 'name-2', '3.0']], row_count: 3, truncated: false });
  });

  it('given hive-partitioned Parquet, when a glob names the partitions, then every matching object is read, ** reaching nested folders', async () => {
    const one = await run("SELECT year, count(*) AS n, sum(total) AS total FROM read_parquet('s3://data/sales/*/*.parquet', hive_partitioning = true) GROUP BY year ORDER BY year");
    expect(one.rows).to.deep.equal([[2023, 3, 60], [2024, 2, 52]]);
    const deep = await run("SELECT count(*) FROM read_parquet('s3://data/sales/**/*.parquet')");
    expect(deep.rows).to.deep.equal([[6]]);
  });

  it('given CSV objects, when read_csv takes a glob or a list, then both files are read', async () => {
    const glob = await run("SELECT id, label FROM read_csv('s3://data/csv/*.csv') ORDER BY id");
    expect(glob.rows).to.deep.equal([[1, 'one'], [2, 'two'], [3, 'three'], [4, 'four']]);
    const list = await run("SELECT count(*) FROM read_csv(['s3://data/csv/a.csv', 's3://data/csv/b.csv'], header = true)");
    expect(list.rows).to.deep.equal([[4]]);
  });

  it('given a JSON object, when read_json names it, then its rows with ISO timestamps', async () => {
    const result = await run(`SELECT kind, "at" FROM read_json('s3://data/events.json', columns = {kind: 'VARCHAR', "at": 'TIMESTAMP'}) ORDER BY "at"`);
    expect(result.rows).to.deep.equal([['start', '2024-05-01T10:00:00.000Z'], ['stop', '2024-05-01T10:05:00.000Z']]);
  });

  it('given FROM and DESCRIBE on a URL, when executed, then the replacement scan and the column description work', async () => {
    const from = await run("SELECT count(*) AS n FROM 's3://data/orders.parquet'");
    expect(from.rows).to.deep.equal([[100]]);
    const describe = await run("DESCRIBE SELECT * FROM read_parquet('s3://data/orders.parquet')");
    expect(describe.columns.slice(0, 2)).to.deep.equal(['column_name', 'column_type']);
    expect(describe.rows.map((row) => row.slice(0, 2))).to.deep.equal([['id', 'BIGINT'], ['name', 'VARCHAR'], ['amount', 'DECIMAL(21,1)']]);
    const direct = await run("DESCRIBE 's3://data/csv/a.csv'");
    expect(direct.rows.map((row) => row[0])).to.deep.equal(['id', 'label']);
  });

  it('given more rows than maxRows, when executed, then maxRows with truncated', async () => {
    const result = await run("SELECT * FROM read_parquet('s3://data/orders.parquet')", { maxRows: 10 });
    expect(result.row_count).to.equal(10);
    expect(result.truncated).to.equal(true);
  });

  it('given a URL used as a value, in a comment or an identifier, when executed, then it is left as written', async () => {
    const result = await run(`-- read_parquet('s3://data/orders.parquet')
      SELECT 's3://data/orders.parquet' AS "s3://data/x", count(*) AS n FROM read_parquet('s3://data/orders.parquet') /* FROM 's3://data/nope' */`);
    expect(result.columns).to.deep.equal(['s3://data/x', 'n']);
    expect(result.rows).to.deep.equal([['s3://data/orders.parquet', 100]]);
  });

  it('given objects over the fetch cap, when executed, then sql naming the limit, before any download', async () => {
    const error = await failure(() => aws({}, { fetchMaxBytes: 1000 }).execute(queryRequest("SELECT * FROM read_parquet('s3://data/**/*.parquet')")), 'sql');
    expect(error.message).to.contain('QUERY_OBJECTS_MAX_MB');
    const count = await failure(() => aws({}, { fetchMaxObjects: 2 }).execute(queryRequest("SELECT * FROM read_parquet('s3://data/sales/**/*.parquet')")), 'sql');
    expect(count.message).to.contain('QUERY_OBJECTS_MAX_COUNT');
  });

  it('given a missing object or bucket, when executed, then sql saying which', async () => {
    expect((await failure(() => run("SELECT * FROM read_parquet('s3://data/nope.parquet')"), 'sql')).message).to.contain('s3://data/nope.parquet: no such object');
    expect((await failure(() => run("SELECT * FROM read_parquet('s3://missing/*.parquet')"), 'sql')).message).to.contain('no such bucket');
  });

  it('given a glob matching nothing, when executed, then DuckDB says no file matched', async () => {
    const error = await failure(() => run("SELECT * FROM read_parquet('s3://data/none/*.parquet')"), 'sql');
    expect(error.message).to.match(/No files found/i);
  });

  it('given a local path, another scheme, or a path with ".." segments, when executed, then refused', async () => {
    expect((await failure(() => run("SELECT * FROM read_csv('/etc/passwd')"), 'sql')).message).to.match(/Permission Error|disabled by configuration/);
    expect((await failure(() => run("SELECT * FROM read_csv('gs://data/csv/a.csv')"), 'sql')).message).to.contain('reads s3:// URLs');
    expect((await failure(() => run("SELECT * FROM read_csv('s3://data/../data/csv/a.csv')"), 'sql')).message).to.contain('".."');
  });

  it('given a statement other than SELECT or EXPLAIN, when executed, then DuckDB\'s parser refuses it', async () => {
    await failure(() => run("COPY (SELECT 1) TO 'x.csv'"), 'sql');
    expect((await failure(() => run('CREATE TABLE t AS SELECT 1'), 'sql')).message).to.contain('not CREATE');
    expect((await failure(() => run('SELECT 1; SELECT 2'), 'sql')).message).to.contain('Exactly one');
  });

  it('given a statement running past the statement timeout, when executed, then timeout', async () => {
    // 1e11 rows: without the timeout it would run for hours, and the test's timeout would end it.
    await failure(() => run("SELECT count(*) FROM read_parquet('s3://data/orders.parquet'), range(100000000000)", { statementTimeoutMs: 1500 }), 'timeout');
  });

  it('given keys the store refuses, when executed, then unreachable', async () => {
    await failure(() => aws({ access_key: 'NOT-S3RVER' }).execute(queryRequest("SELECT * FROM read_parquet('s3://data/orders.parquet')")), 'unreachable');
  });

  it('given an endpoint nobody listens on, when executed, then unreachable', async () => {
    const target = cloudTargetFactoriesWith({ settings, endpoints: { s3: await closedPortUrl() } })['connection.aws']!({ itemType: 'connection.aws', params: { region: 'us-east-1', access_key: 'k', secret_key: 's' } });
    await failure(() => target.execute(queryRequest("SELECT * FROM read_parquet('s3://data/orders.parquet')")), 'unreachable');
  });

  it('given a gcp connection with HMAC keys and an endpoint, when gs:// and gcs:// URLs are read, then through the S3-compatible API', async () => {
    const target = cloudTargetFactoriesWith({ settings })['connection.gcp']!({
      itemType: 'connection.gcp',
      params: { access_key: S3RVER_KEYS.accessKeyId, secret_key: S3RVER_KEYS.secretAccessKey, endpoint: s3.url },
    });
    const result = await target.execute(queryRequest("SELECT count(*) FROM read_parquet('gs://data/orders.parquet') UNION ALL SELECT count(*) FROM read_csv('gcs://data/csv/*.csv')"));
    expect(result.rows).to.deep.equal([[100], [4]]);
    const wrongScheme = await failure(() => target.execute(queryRequest("SELECT * FROM read_csv('s3://data/csv/a.csv')")), 'sql');
    expect(wrongScheme.message).to.contain('gs:// or gcs://');
  });

  it('given DUCKDB_EXTENSION_DIRECTORY without the extension, when executed, then the objects are fetched as without it', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'duckdb-extensions-'));
    try {
      const result = await aws({}, { extensionDirectory: empty }).execute(queryRequest("SELECT count(*) FROM read_parquet('s3://data/orders.parquet')"));
      expect(result.rows).to.deep.equal([[100]]);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('given DUCKDB_EXTENSION_DIRECTORY with an httpfs file DuckDB cannot load, when executed, then unreachable naming the set-up, nothing downloaded', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'duckdb-extensions-'));
    try {
      const { DuckDBInstance } = await import('@duckdb/node-api');
      const instance = await DuckDBInstance.create(':memory:');
      const connection = await instance.connect();
      const [version, platform] = (await connection.runAndReadAll('SELECT (SELECT library_version FROM pragma_version()), (SELECT platform FROM pragma_platform())')).getRows()[0]!.map(String);
      connection.closeSync();
      instance.closeSync();
      mkdirSync(join(directory, version!, platform!), { recursive: true });
      writeFileSync(join(directory, version!, platform!, 'httpfs.duckdb_extension'), 'not an extension');
      const error = await failure(() => aws({}, { extensionDirectory: directory }).execute(queryRequest("SELECT count(*) FROM read_parquet('s3://data/orders.parquet')")), 'unreachable');
      expect(error.message).to.contain('embedded engine could not be set up');
      expect(error.message).not.to.contain(S3RVER_KEYS.secretAccessKey + "'");
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
