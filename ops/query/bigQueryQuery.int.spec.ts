import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CLOUD_QUERY_SETTINGS } from './cloudQuerySettings.ts';
import { cloudTargetFactoriesWith } from './cloudTargets.ts';
import { bigQueryStub, serviceAccount, type BigQueryCall } from '../../test/support/cloud/bigQueryStub.ts';
import { failure, queryRequest } from '../../test/support/cloud/queryRequest.ts';

const SCHEMA = {
  fields: [
    { name: 'id', type: 'INTEGER', mode: 'NULLABLE' },
    { name: 'name', type: 'STRING', mode: 'NULLABLE' },
    { name: 'score', type: 'FLOAT', mode: 'NULLABLE' },
    { name: 'ok', type: 'BOOLEAN', mode: 'NULLABLE' },
    { name: 'at', type: 'TIMESTAMP', mode: 'NULLABLE' },
    { name: 'amount', type: 'NUMERIC', mode: 'NULLABLE' },
    { name: 'raw', type: 'BYTES', mode: 'NULLABLE' },
    { name: 'tags', type: 'STRING', mode: 'REPEATED' },
    { name: 'place', type: 'RECORD', mode: 'NULLABLE', fields: [{ name: 'city', type: 'STRING' }, { name: 'zip', type: 'INTEGER' }] },
  ],
};

const row = (i: number) => ({
  f: [
    { v: String(i) },
    { v: i === 0 ? null : `name-${i}` },
    { v: String(i / 2) },
    { v: i % 2 === 0 ? 'true' : 'false' },
    { v: '1714557600123456' },
    { v: '12345678901234567890.5' },
    { v: 'aGk=' },
    { v: [{ v: 'a' }, { v: 'b' }] },
    { v: { f: [{ v: 'Lyon' }, { v: '69001' }] } },
  ],
});

/** getQueryResults over `total` rows: maxResults per page (at most `pageLimit`, as BigQuery's 10 MB pages would), pageToken an offset. */
const page = (call: BigQueryCall, total: number, pageLimit: number) => {
  const offset = Number(call.query.get('pageToken') ?? call.body?.pageToken ?? 0);
  const size = Math.min(pageLimit, Number(call.query.get('maxResults') ?? call.body?.maxResults ?? pageLimit));
  const rows = [];
  for (let i = offset; i < Math.min(total, offset + size); i += 1) rows.push(row(i));
  return {
    schema: SCHEMA,
    totalRows: String(total),
    rows,
    jobComplete: true,
    cacheHit: false,
    jobReference: { projectId: 'acme-analytics', jobId: 'job_1', location: 'EU' },
    ...(offset + size < total ? { pageToken: String(offset + size) } : {}),
  };
};

describe('BigQuery target (connection.gcp with project) against a stub of the BigQuery REST API', () => {
  const { json: key, publicKeyPem } = serviceAccount();
  const factories = (url: string, ambientCredentials = true) =>
    cloudTargetFactoriesWith({ settings: { ...DEFAULT_CLOUD_QUERY_SETTINGS, ambientCredentials }, endpoints: { bigquery: url } });
  const connection = (params: Record<string, unknown> = {}) => ({
    itemType: 'connection.gcp',
    params: { project: 'acme-analytics', credentials: JSON.stringify(key), dataset: 'sales', location: 'EU', ...params },
  });

  it('given a job that completes after a poll, when executed, then typed rows across pages, signed with the service account\'s own JWT', async () => {
    let polled = false;
    const stub = await bigQueryStub(publicKeyPem, (call) => {
      if (call.method === 'POST' && call.path.endsWith('/queries')) {
        return { body: { kind: 'bigquery#queryResponse', jobReference: { projectId: 'acme-analytics', jobId: 'job_1', location: 'EU' }, jobComplete: false } };
      }
      if (call.query.get('pageToken') === null && !polled) {
        polled = true;
        return { body: { kind: 'bigquery#getQueryResultsResponse', jobReference: { projectId: 'acme-analytics', jobId: 'job_1', location: 'EU' }, jobComplete: false } };
      }
      return { body: { kind: 'bigquery#getQueryResultsResponse', ...page(call, 2500, 1000) } };
    });
    try {
      const result = await factories(stub.url)['connection.gcp']!(connection()).execute(queryRequest('SELECT * FROM orders'));
      expect(result.columns).to.deep.equal(['id', 'name', 'score', 'ok', 'at', 'amount', 'raw', 'tags', 'place']);
      expect(result.row_count).to.equal(2500);
      expect(result.truncated).to.equal(false);
      expect(result.rows[1]).to.deep.equal([1, 'name-1', 0.5, false, '2024-05-01T10:00:00.123456Z', '12345678901234567890.5', 'aGk=', ['a', 'b'], { city: 'Lyon', zip: 69001 }]);
      expect(result.rows[0]?.[1]).to.equal(null);

      const query = stub.calls[0]!;
      expect(query.path).to.equal('/bigquery/v2/projects/acme-analytics/queries');
      expect(query.body).to.deep.include({ query: 'SELECT * FROM orders', useLegacySql: false, location: 'EU', defaultDataset: { projectId: 'acme-analytics', datasetId: 'sales' }, maxResults: 10_001 });
      expect(query.claims).to.include({ iss: key.client_email, sub: key.client_email, scope: 'https://www.googleapis.com/auth/bigquery' });
      const gets = stub.calls.slice(1);
      expect(gets.every((call) => call.method === 'GET' && call.path === '/bigquery/v2/projects/acme-analytics/queries/job_1' && call.query.get('location') === 'EU')).to.equal(true);
      expect(gets.map((call) => call.query.get('pageToken'))).to.deep.equal([null, null, '1000', '2000']);
    } finally {
      await stub.close();
    }
  });

  it('given credentials as an object and more rows than maxRows, when executed, then maxRows with truncated and no page asked beyond maxRows + 1', async () => {
    const stub = await bigQueryStub(publicKeyPem, (call) => ({ body: { kind: 'bigquery#queryResponse', ...page(call, 100_000, 1000) } }));
    try {
      const result = await factories(stub.url)['connection.gcp']!(connection({ credentials: key })).execute(queryRequest('SELECT * FROM big', { maxRows: 1500 }));
      expect(result.row_count).to.equal(1500);
      expect(result.truncated).to.equal(true);
      expect(stub.calls.map((call) => call.query.get('maxResults') ?? call.body?.maxResults)).to.deep.equal([1501, '501']);
    } finally {
      await stub.close();
    }
  });

  it('given a syntax error, when executed, then sql with BigQuery\'s message', async () => {
    const stub = await bigQueryStub(publicKeyPem, () => ({
      status: 400,
      body: {
        error: {
          code: 400,
          message: 'Syntax error: Unexpected identifier "SELEC" at [1:1]',
          errors: [{ message: 'Syntax error: Unexpected identifier "SELEC" at [1:1]', domain: 'global', reason: 'invalidQuery', location: 'q', locationType: 'parameter' }],
          status: 'INVALID_ARGUMENT',
        },
      },
    }));
    try {
      const error = await failure(() => factories(stub.url)['connection.gcp']!(connection()).execute(queryRequest('SELEC 1')), 'sql');
      expect(error.message).to.contain('Syntax error: Unexpected identifier "SELEC" at [1:1]');
    } finally {
      await stub.close();
    }
  });

  it('given a key BigQuery does not accept, when executed, then unreachable (502)', async () => {
    const other = serviceAccount();
    const stub = await bigQueryStub(publicKeyPem, () => ({ body: {} }));
    try {
      const error = await failure(() => factories(stub.url)['connection.gcp']!(connection({ credentials: other.json })).execute(queryRequest('SELECT 1')), 'unreachable');
      expect(error.message).to.contain('invalid authentication credentials');
      expect(error.message).not.to.contain('PRIVATE KEY');
    } finally {
      await stub.close();
    }
  });

  it('given a job still running at the statement timeout, when executed, then timeout, and jobs.cancel was sent', async () => {
    const stub = await bigQueryStub(publicKeyPem, async (call) => {
      if (call.path.endsWith('/cancel')) return { body: { kind: 'bigquery#jobCancelResponse', job: { jobReference: { projectId: 'acme-analytics', jobId: 'job_1' } } } };
      // getQueryResults long-polls: it answers after its timeoutMs (cut short here).
      if (call.method === 'GET') await new Promise((resolve) => setTimeout(resolve, 100));
      return { body: { jobReference: { projectId: 'acme-analytics', jobId: 'job_1', location: 'EU' }, jobComplete: false } };
    });
    try {
      await failure(() => factories(stub.url)['connection.gcp']!(connection()).execute(queryRequest('SELECT slow()', { statementTimeoutMs: 500 })), 'timeout');
      const cancel = stub.calls.find((call) => call.path.endsWith('/cancel'));
      expect(cancel?.path).to.equal('/bigquery/v2/projects/acme-analytics/jobs/job_1/cancel');
      expect(cancel?.query.get('location')).to.equal('EU');
    } finally {
      await stub.close();
    }
  });

  it('given no credentials, when executed, then application default credentials are used (here a key file named by GOOGLE_APPLICATION_CREDENTIALS)', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'adc-'));
    const file = join(folder, 'key.json');
    writeFileSync(file, JSON.stringify(key));
    const previous = process.env.GOOGLE_APPLICATION_CREDENTIALS;
    process.env.GOOGLE_APPLICATION_CREDENTIALS = file;
    const stub = await bigQueryStub(publicKeyPem, (call) => ({ body: page(call, 3, 1000) }));
    try {
      const result = await factories(stub.url)['connection.gcp']!(connection({ credentials: undefined })).execute(queryRequest('SELECT 1'));
      expect(result.row_count).to.equal(3);
      expect(stub.calls[0]?.claims?.iss).to.equal(key.client_email);
    } finally {
      if (previous === undefined) delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
      else process.env.GOOGLE_APPLICATION_CREDENTIALS = previous;
      await stub.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('given no credentials while the service lends none of its own, when the target is built, then bad_connection', async () => {
    const error = await failure(() => factories('http://127.0.0.1:9', false)['connection.gcp']!(connection({ credentials: undefined })), 'bad_connection');
    expect(error.message).to.contain('QUERY_CLOUD_AMBIENT_CREDENTIALS');
  });

  it('given credentials that are not JSON, when the target is built, then bad_connection without the value', async () => {
    const error = await failure(() => factories('http://127.0.0.1:9')['connection.gcp']!(connection({ credentials: '{"private_key": "TOPSECRET' })), 'bad_connection');
    expect(error.message).to.contain('not valid JSON');
    expect(error.message).not.to.contain('TOPSECRET');
  });
});
